// The verdict of `npm run chaos`: the JSON summary line, the failures that make it exit non-zero,
// and the tables for people.
import { ARTIFACT_CHECKS, HOSTED_CHECKS, WITNESS_CHECKS } from '@baton/testing/ledger-audit'
import type { Audit } from './audit.ts'
import { HISTORY_CHECKS, REMEMBERER } from './history.ts'
import { RUNS_PER_SESSION } from './hosted.ts'
import type { Crash } from './fleet.ts'
import type { WebhookAudit } from './webhooks.ts'
import { bump, type ChaosRun, type Kind } from './run.ts'

export interface Summary {
  readonly submitted: number
  readonly terminal: number
  readonly lost: number
  readonly duplicate_terminal: number
  readonly duplicate_execution: number
  readonly stuck: number
  readonly orphan_transitions: number
  readonly faults: Readonly<Record<string, number>>
  readonly context: { readonly agents: number; readonly events: number; readonly bad: number }
  readonly witness: { readonly attempts: number; readonly starts: number; readonly bad: number }
  readonly continuations: {
    readonly admitted: number
    readonly delivered: number
    readonly suppressed: number
    readonly duplicate: number
    readonly missing: number
    /** Results whose artifact expired while a continuation still held a copy of its bytes. */
    readonly expiredBytes: number
    /** Deliveries without a receipt binding their input, or without a completed consumer. */
    readonly unreceipted: number
  }
  readonly artifacts: {
    readonly artifacts: number
    readonly verified: number
    readonly bad: number
  }
  /** Push delivery to the pushed sessions' receiver (lib/chaos/webhooks.ts). */
  readonly webhooks: {
    readonly ids: number
    readonly delivered: number
    readonly missing: number
    readonly bad_signature: number
  }
  /** Hosted sessions (lib/chaos/hosted.ts), audited by `auditHostedSessions`. */
  readonly hosted: {
    readonly sessions: number
    readonly runs: number
    readonly continuation_runs: number
    /** Results of children whose parent run had ended, and of those the ones that ended after it. */
    readonly results: number
    readonly late_results: number
    readonly conversation_events: number
    /** Starts of a run while another run of its session was active. */
    readonly overlapping: number
    readonly continuations_missing: number
    readonly continuations_duplicate: number
    /** Violations of the conversation checks (gap, foreign, order, stream, recall). */
    readonly conversation_bad: number
    /** Hosted runs still queued or active after the wait. */
    readonly stuck_runs: number
  }
}

export function summarize(
  run: ChaosRun,
  a: Audit,
  webhooks: WebhookAudit,
  hostedOpen: number,
): Summary {
  const hostedCount = (check: keyof typeof HOSTED_CHECKS) => a.hosted.violations.get(check) ?? 0
  return {
    submitted: run.submitted.size,
    terminal: a.terminal,
    lost: a.invariants.lost,
    duplicate_terminal: a.invariants.duplicate_terminal,
    duplicate_execution: a.invariants.duplicate_execution,
    stuck: a.invariants.stuck,
    orphan_transitions: a.invariants.orphan_transitions,
    faults: Object.fromEntries(run.faultKinds.map((k) => [k, run.faults[k] ?? 0])),
    context: { agents: a.context.agents, events: a.context.events, bad: a.context.bad },
    witness: { attempts: a.witness.attempts, starts: a.witness.starts, bad: a.witness.bad },
    continuations: {
      admitted: a.continuations.admitted,
      delivered: a.continuations.delivered,
      suppressed: a.continuations.suppressed,
      duplicate: a.continuations.duplicate,
      missing: a.continuations.missing,
      expiredBytes: a.continuations.expiredBytes,
      unreceipted: a.continuations.unreceipted,
    },
    artifacts: {
      artifacts: a.artifacts.artifacts,
      verified: a.artifacts.verified,
      bad: a.artifacts.bad,
    },
    webhooks: {
      ids: webhooks.ids,
      delivered: webhooks.delivered,
      missing: webhooks.missing,
      bad_signature: webhooks.bad_signature,
    },
    hosted: {
      sessions: a.hosted.sessions,
      runs: a.hosted.runs,
      continuation_runs: a.hosted.continuationRuns,
      results: a.hosted.results,
      late_results: a.hosted.lateResults,
      conversation_events: a.hosted.conversationEvents,
      overlapping: hostedCount('overlapping_runs'),
      continuations_missing: hostedCount('continuation_missing'),
      continuations_duplicate: hostedCount('continuation_duplicate'),
      conversation_bad:
        a.hosted.bad -
        hostedCount('overlapping_runs') -
        hostedCount('continuation_missing') -
        hostedCount('continuation_duplicate'),
      stuck_runs: hostedOpen,
    },
  }
}

/** Why the run fails; empty when it passes. */
export function failuresOf(run: ChaosRun, summary: Summary, crashes: readonly Crash[]): string[] {
  const failures: string[] = []
  for (const key of [
    'lost',
    'duplicate_terminal',
    'duplicate_execution',
    'stuck',
    'orphan_transitions',
  ] as const)
    if (summary[key] !== 0) failures.push(`${key} = ${summary[key]}`)
  for (const kind of run.faultKinds) if (!run.faults[kind]) failures.push(`no ${kind}`)
  if (run.submitted.size < run.options.count)
    failures.push(`only ${run.submitted.size} of ${run.options.count} accepted`)
  if (summary.context.bad !== 0) failures.push(`context bad = ${summary.context.bad}`)
  if (summary.witness.bad !== 0) failures.push(`witness bad = ${summary.witness.bad}`)
  for (const key of ['duplicate', 'missing', 'expiredBytes', 'unreceipted'] as const)
    if (summary.continuations[key] !== 0)
      failures.push(`continuations ${key} = ${summary.continuations[key]}`)
  if (summary.artifacts.bad !== 0) failures.push(`artifacts bad = ${summary.artifacts.bad}`)
  if (summary.artifacts.verified === 0) failures.push('no artifact was verified')
  if (summary.webhooks.missing !== 0)
    failures.push(`webhooks missing = ${summary.webhooks.missing}`)
  if (summary.webhooks.bad_signature !== 0)
    failures.push(`webhooks bad_signature = ${summary.webhooks.bad_signature}`)
  if (summary.webhooks.delivered === 0) failures.push('no webhook event was delivered')
  const continued = [...run.submitted.values()].filter((s) => s.kind === 'continued').length
  if (run.continuations.size < continued)
    failures.push(`only ${run.continuations.size} of ${continued} continuations accepted`)
  for (const key of [
    'overlapping',
    'continuations_missing',
    'continuations_duplicate',
    'conversation_bad',
    'stuck_runs',
  ] as const)
    if (summary.hosted[key] !== 0) failures.push(`hosted ${key} = ${summary.hosted[key]}`)
  // The hosted checks must have had something to check.
  if (run.stats.hosted.sessions < run.options.hosted)
    failures.push(
      `only ${run.stats.hosted.sessions} of ${run.options.hosted} hosted sessions created`,
    )
  if (run.stats.hosted.runs < run.options.hosted * RUNS_PER_SESSION)
    failures.push(
      `only ${run.stats.hosted.runs} of ${run.options.hosted * RUNS_PER_SESSION} hosted runs queued`,
    )
  if (summary.hosted.late_results === 0) failures.push('no late result of a hosted run')
  if (run.options.strict && crashes.length > 0) failures.push(`${crashes.length} process crashes`)
  return failures
}

function table(
  run: ChaosRun,
  title: string,
  rows: readonly (readonly [string, string | number])[],
): void {
  const width = Math.max(title.length, ...rows.map(([k]) => k.length))
  run.log('')
  run.log(`| ${title.padEnd(width)} | ${'count'.padStart(7)} |`)
  run.log(`|${'-'.repeat(width + 2)}|${'-'.repeat(8)}:|`)
  for (const [k, v] of rows) run.log(`| ${k.padEnd(width)} | ${String(v).padStart(7)} |`)
}

const byCount = (m: ReadonlyMap<string, number>) => [...m].sort((x, y) => y[1] - x[1])

export function printTables(run: ChaosRun, summary: Summary, a: Audit, crashes: readonly Crash[]) {
  const { stats } = run
  const kindCounts = new Map<Kind, number>()
  for (const sub of run.submitted.values()) bump(kindCounts, sub.kind)
  table(run, 'invariant', [
    ['submitted (202)', summary.submitted],
    ['terminal', summary.terminal],
    ['lost', summary.lost],
    ['duplicate_terminal', summary.duplicate_terminal],
    ['duplicate_execution', summary.duplicate_execution],
    ['stuck', summary.stuck],
    ['orphan_transitions', summary.orphan_transitions],
    ['context bad', a.context.bad],
    ['witness bad', a.witness.bad],
    ['artifacts bad', a.artifacts.bad],
    ['continuations duplicate', a.continuations.duplicate],
    ['continuations missing', a.continuations.missing],
    ['continuations expired bytes', a.continuations.expiredBytes],
    ['continuations unreceipted', a.continuations.unreceipted],
    ['webhooks missing', summary.webhooks.missing],
    ['webhooks bad_signature', summary.webhooks.bad_signature],
    ['hosted overlapping runs', summary.hosted.overlapping],
    ['hosted continuations missing', summary.hosted.continuations_missing],
    ['hosted continuations duplicate', summary.hosted.continuations_duplicate],
    ['hosted conversation bad', summary.hosted.conversation_bad],
    ['hosted runs stuck', summary.hosted.stuck_runs],
  ])
  table(run, 'hosted sessions', [
    ['sessions', summary.hosted.sessions],
    ['user runs queued (201)', run.stats.hosted.runs],
    ['runs', summary.hosted.runs],
    ['continuation runs', summary.hosted.continuation_runs],
    ['results of ended runs', summary.hosted.results],
    ['late results', summary.hosted.late_results],
    ['conversation events', summary.hosted.conversation_events],
  ])
  table(run, 'webhooks (pushed sessions)', [
    ['events (ids)', summary.webhooks.ids],
    ['delivered', summary.webhooks.delivered],
  ])
  table(run, 'continuations (results of parent runs)', [
    ['admitted', a.continuations.admitted],
    ['delivered', a.continuations.delivered],
    ['suppressed', a.continuations.suppressed],
  ])
  table(
    run,
    'fault',
    run.faultKinds.map((k) => [k, run.faults[k] ?? 0] as const),
  )
  table(run, 'stopReason/failureCategory', byCount(a.outcomes))
  table(
    run,
    'kind → outcome',
    [...a.byKind].flatMap(([kind, m]) =>
      byCount(m).map(([o, n]) => [`${kind} (${kindCounts.get(kind) ?? 0}) → ${o}`, n] as const),
    ),
  )
  table(run, 'context (agent histories)', [
    [`${REMEMBERER} agents`, a.context.agents],
    ['history events', a.context.events],
    ['continuations accepted', run.continuations.size],
    ...byCount(a.context.continuationOutcomes).map(([o, n]) => [`continuation → ${o}`, n] as const),
    ...[...stats.continuation].sort().map(([s, n]) => [`continue: ${s}`, n] as const),
    ...[...a.context.violations].map(([check, n]) => [check, n] as const),
  ])
  table(run, 'execution witness', [
    ['witnessed attempts', a.witness.attempts],
    ['witnessed starts', a.witness.starts],
    ...[...a.witness.violations].map(([check, n]) => [check, n] as const),
  ])
  table(run, 'artifacts (outputs above the inline bound)', [
    ['artifacts', a.artifacts.artifacts],
    ['content verified against its digest', a.artifacts.verified],
    ...[...a.artifacts.violations].map(([check, n]) => [check, n] as const),
  ])
  table(run, 'ledger and client', [
    ['process crashes (restarted)', crashes.length],
    ['ledger rows', a.ledgerRows],
    ['rows unknown to the client (202 lost)', a.unknownToClient],
    ['process_lost transitions', a.processLost],
    ['cancelled_queued transitions', a.cancelledQueued],
    ['completed with unexpected output', a.mismatchedOutput],
    ['POST connection errors (retried)', stats.postConnectionErrors],
    ...[...stats.postRetryStatus].map(([s, n]) => [`POST answered ${s} (retried)`, n] as const),
    ...[...stats.postRejected].map(([s, n]) => [`POST rejected ${s}`, n] as const),
    ...[...stats.steer].map(([s, n]) => [`steer ${s}`, n] as const),
    ...[...stats.cancel].sort().map(([s, n]) => [`cancel ${s}`, n] as const),
    ['follow-up connection errors (retried)', stats.followUpErrors],
    ['follow-ups given up', stats.followUpGaveUp],
    ['orphan hang/steer attempts cancelled', stats.orphanCancels],
  ])
}

/** The details behind a failing check: crash reasons, broken checks, offending rows. */
export function printDetails(run: ChaosRun, a: Audit, crashes: readonly Crash[]): void {
  if (crashes.length > 0) {
    const reasons = new Map<string, number>()
    for (const c of crashes) bump(reasons, `${c.name.replace(/-\d+$/, '')}: ${c.reason}`)
    run.log(
      `WARN: ${crashes.length} unexpected process exits (restarted by this script; --strict fails on them):`,
    )
    for (const [reason, n] of reasons) run.log(`  ${n}× ${reason}`)
  }
  if (a.context.bad > 0) {
    run.log('broken history checks:')
    for (const [check, n] of a.context.violations)
      if (n > 0) run.log(`  ${n}× ${check}: ${HISTORY_CHECKS[check]}`)
    run.log('offending histories (first 10):')
    for (const line of a.context.samples) run.log(`  ${line}`)
  }
  if (a.witness.bad > 0) {
    run.log('broken witness checks:')
    for (const [check, n] of a.witness.violations)
      if (n > 0) run.log(`  ${n}× ${check}: ${WITNESS_CHECKS[check]}`)
    run.log('offending witnessed attempts (first 10):')
    for (const line of a.witness.samples) run.log(`  ${line}`)
  }
  if (a.artifacts.bad > 0) {
    run.log('broken artifact checks:')
    for (const [check, n] of a.artifacts.violations)
      if (n > 0) run.log(`  ${n}× ${check}: ${ARTIFACT_CHECKS[check]}`)
    for (const line of a.artifacts.samples) run.log(`  ${line}`)
  }
  if (a.hosted.bad > 0) {
    run.log('broken hosted-session checks:')
    for (const [check, n] of a.hosted.violations)
      if (n > 0) run.log(`  ${n}× ${check}: ${HOSTED_CHECKS[check]}`)
    for (const line of a.hosted.samples) run.log(`  ${line}`)
  }
  if (a.invariants.samples.length > 0) {
    run.log('offending attempts (first 10):')
    for (const line of a.invariants.samples) run.log(`  ${line}`)
  }
  if (a.continuations.samples.length > 0) {
    run.log('attempts with a duplicate or missing continuation (first 10):')
    for (const id of a.continuations.samples) run.log(`  ${id}`)
  }
}
