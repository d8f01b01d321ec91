// After the run: wait until the ledger is quiescent, then audit it — the shared ledger invariants
// and execution witness (@baton/testing/ledger-audit), the agent-history checks (history.ts), and
// the outcomes the client can check against what it sent.
import { setTimeout as sleep } from 'node:timers/promises'
import { CompiledQuery, sql } from 'kysely'
import { isTransientStoreError, type Db } from '@baton/store'
import {
  auditArtifacts,
  auditContinuations,
  auditExecutionWitness,
  auditHostedSessions,
  auditLedger,
  type ArtifactAudit,
  type ContinuationAudit,
  type HostedAudit,
  type LedgerInvariants,
  type WitnessAudit,
} from '@baton/testing/ledger-audit'
import { auditHistory, type HistoryAudit, type Query } from './history.ts'
import { STEER_BACKSTOP_MS, cancelUntilAnswered } from './follow-ups.ts'
import { HOSTED_PROFILES } from './hosted.ts'
import { ProgressDeadline } from './progress-deadline.ts'
import { retryCall } from './retry.ts'
import { bump, track, type ChaosRun, type Kind } from './run.ts'
import { WITNESSED, readWitness } from './witness.ts'

/** Retries a read of the ledger through a terminated backend or a reconnect. */
function readLedger<T>(read: () => Promise<T>): Promise<T> {
  return retryCall(read, {
    signal: AbortSignal.timeout(30_000),
    maxDelayMs: 200,
    transient: isTransientStoreError,
  })
}

const openAttemptCount = (db: Db): Promise<number> =>
  readLedger(async () => {
    const r = await sql<{ n: number }>`
      select count(*)::int as n from attempts where status <> 'terminal'
    `.execute(db)
    return r.rows[0]?.n ?? 0
  })

/**
 * Aborts `controller` once no attempt has ended for one quiescence timeout; answers a function
 * that stops watching.
 */
export function abortWhenStalled(run: ChaosRun, db: Db, controller: AbortController): () => void {
  const deadline = new ProgressDeadline(run.options.quiesceTimeoutMs)
  let stopped = false
  void (async () => {
    while (!stopped && !controller.signal.aborted) {
      const open = await openAttemptCount(db).catch(() => Number.POSITIVE_INFINITY)
      if (deadline.passed(open)) {
        controller.abort(
          new Error('follow-up deadline: no attempt ended for one quiescence timeout'),
        )
        return
      }
      await sleep(1_000)
    }
  })()
  return () => {
    stopped = true
  }
}

/**
 * Waits until no attempt is non-terminal, or until none has ended for one quiescence timeout;
 * cancels hanging attempts nobody got a 202 for.
 */
export async function waitForQuiescence(run: ChaosRun, db: Db): Promise<number> {
  const deadline = new ProgressDeadline(run.options.quiesceTimeoutMs)
  const orphansCancelled = new Set<string>()
  let lastReport = 0
  for (;;) {
    const open = await readLedger(async () => {
      const r = await sql<{ id: string; status: string; prompt: string; age_ms: number }>`
        select id, status, prompt::text as prompt,
               (extract(epoch from now() - created_at) * 1000)::float8 as age_ms
        from attempts where status <> 'terminal'
      `.execute(db)
      return r.rows
    })
    if (open.length === 0) return 0
    for (const row of open) {
      // An accepted delegation whose 202 was lost (connection cut mid-answer) cannot be known to
      // the client; if its child waits for a cancel or a steer, the client must still end it.
      if (
        !run.submitted.has(row.id) &&
        !orphansCancelled.has(row.id) &&
        row.age_ms > STEER_BACKSTOP_MS &&
        /hang|awaitSteering/.test(row.prompt)
      ) {
        orphansCancelled.add(row.id)
        run.stats.orphanCancels += 1
        track(
          run,
          cancelUntilAnswered(run, row.id, 'orphan').then(() => undefined),
        )
      }
    }
    if (Date.now() - lastReport > 5_000) {
      lastReport = Date.now()
      const byStatus = new Map<string, number>()
      for (const row of open) bump(byStatus, row.status)
      run.note(`waiting for quiescence: ${[...byStatus].map(([s, n]) => `${n} ${s}`).join(', ')}`)
    }
    if (deadline.passed(open.length)) return open.length
    await sleep(500)
  }
}

/**
 * Waits until no hosted run is queued or active (a continuation run may be queued between two
 * runs of its session while every attempt is terminal); answers how many still are once none
 * has ended for one quiescence timeout.
 */
export async function waitForHostedRuns(run: ChaosRun, db: Db): Promise<number> {
  const deadline = new ProgressDeadline(run.options.quiesceTimeoutMs)
  let lastReport = 0
  for (;;) {
    const open = await readLedger(async () => {
      const r = await sql<{ n: number }>`
        select count(*)::int as n from runs where hosted and status in ('pending', 'active')
      `.execute(db)
      return r.rows[0]?.n ?? 0
    })
    if (open === 0 || deadline.passed(open)) return open
    if (Date.now() - lastReport > 5_000) {
      lastReport = Date.now()
      run.note(`waiting for hosted runs: ${open} queued or active`)
    }
    await sleep(500)
  }
}

export interface Audit {
  readonly invariants: LedgerInvariants
  readonly witness: WitnessAudit
  readonly context: HistoryAudit
  readonly artifacts: ArtifactAudit
  readonly terminal: number
  readonly ledgerRows: number
  readonly unknownToClient: number
  readonly processLost: number
  readonly cancelledQueued: number
  readonly outcomes: ReadonlyMap<string, number>
  readonly byKind: ReadonlyMap<Kind, ReadonlyMap<string, number>>
  readonly mismatchedOutput: number
  /**
   * Results of delegations with a parent run: one continuation or a recorded suppression each,
   * no expired bytes anywhere, every consumption with a receipt.
   */
  readonly continuations: ContinuationAudit
  /** Hosted sessions: one run at a time, one continuation run per result, conversations intact. */
  readonly hosted: HostedAudit
}

export async function audit(run: ChaosRun, db: Db, witnessFile: string): Promise<Audit> {
  const accepted = [...run.submitted.keys(), ...run.continuations.keys()]
  const invariants = await readLedger(() => auditLedger(db, accepted))
  const witness = await readLedger(async () =>
    auditExecutionWitness(db, WITNESSED, await readWitness(witnessFile)),
  )
  const [counts] = await readLedger(async () => {
    const r = await sql<{
      terminal: number
      ledger_rows: number
      known: number
      process_lost: number
      cancelled_queued: number
    }>`
      select
        (select count(*)::int from attempts where status = 'terminal') as terminal,
        (select count(*)::int from attempts) as ledger_rows,
        (select count(*)::int from attempts where id = any(${accepted}::uuid[])) as known,
        (select count(*)::int from attempt_transitions where event = 'process_lost') as process_lost,
        (select count(*)::int from attempt_transitions where event = 'cancelled_queued') as cancelled_queued
    `.execute(db)
    return r.rows
  })
  const rows = await readLedger(async () => {
    const r = await sql<{
      id: string
      stop_reason: string | null
      failure_category: string | null
      output_preview: string | null
    }>`select id, stop_reason, failure_category, output_preview from attempts where status = 'terminal'`.execute(
      db,
    )
    return r.rows
  })
  const outcomes = new Map<string, number>()
  const byKind = new Map<Kind, Map<string, number>>()
  let mismatchedOutput = 0
  for (const row of rows) {
    const outcome = `${row.stop_reason ?? '?'}/${row.failure_category ?? '-'}`
    bump(outcomes, outcome)
    const sub = run.submitted.get(row.id)
    if (sub === undefined) continue
    let perKind = byKind.get(sub.kind)
    if (perKind === undefined) byKind.set(sub.kind, (perKind = new Map<string, number>()))
    bump(perKind, outcome)
    // A steered child outputs the message it was sent (only when the steer was accepted).
    const expect =
      sub.kind === 'steered' ? (sub.steered === true ? `steer-${sub.i}` : undefined) : sub.expect
    if (row.stop_reason === 'completed' && expect !== undefined && row.output_preview !== expect)
      mismatchedOutput += 1
  }
  const query: Query = async (text, values) =>
    (await db.executeQuery(CompiledQuery.raw(text, values ?? []))).rows as never
  const context = await readLedger(() => auditHistory(query, [...run.continuations.values()]))
  const continuations = await readLedger(() => auditContinuations(db))
  const artifacts = await readLedger(() => auditArtifacts(db))
  const hosted = await readLedger(() => auditHostedSessions(db, { recalling: HOSTED_PROFILES }))
  return {
    invariants,
    witness,
    context,
    artifacts,
    terminal: counts?.terminal ?? 0,
    ledgerRows: counts?.ledger_rows ?? 0,
    unknownToClient: (counts?.ledger_rows ?? 0) - (counts?.known ?? 0),
    processLost: counts?.process_lost ?? 0,
    cancelledQueued: counts?.cancelled_queued ?? 0,
    outcomes,
    byKind,
    mismatchedOutput,
    continuations,
    hosted,
  }
}
