// The ledger invariants, defined once for the kill tests, bench and chaos. Each function answers
// the offending attempt ids (not a count), so a test can name them and a report can sample them.
// Only the ledger is read: `auditExecutionWitness` checks it against a record kept outside it.
import { sql, type RawBuilder } from 'kysely'
import { loadArtifact, type Db } from '@baton/store'

async function ids(db: Db, query: RawBuilder<{ id: string }>): Promise<string[]> {
  return (await query.execute(db)).rows.map((row) => row.id)
}

/** Attempts a client got a 202 for that are missing or not terminal: accepted, never finished. */
export function lostAttempts(db: Db, acceptedIds: readonly string[]): Promise<string[]> {
  return ids(
    db,
    sql`
      select k.id from unnest(${[...acceptedIds]}::uuid[]) as k(id)
      left join attempts a on a.id = k.id
      where a.status is distinct from 'terminal'
    `,
  )
}

/** Attempts in the ledger that are not terminal (after quiescence: stuck). */
export function stuckAttempts(db: Db): Promise<string[]> {
  return ids(db, sql`select id from attempts where status <> 'terminal' order by id`)
}

/** Attempts with more than one transition to `terminal`: an outcome decided twice. */
export function duplicateTerminalAttempts(db: Db): Promise<string[]> {
  return repeatedTransition(db, sql`to_status = 'terminal'`)
}

/** Attempts with more than one transition matching `where`. */
function repeatedTransition(db: Db, where: RawBuilder<unknown>): Promise<string[]> {
  return ids(
    db,
    sql`
      select attempt_id as id from attempt_transitions where ${where}
      group by attempt_id having count(*) > 1 order by attempt_id
    `,
  )
}

/**
 * Attempts the ledger says were claimed more than once without being handed back in between (a
 * worker releases a claim whose child it never started): a child run twice as far as the ledger
 * knows. A second run without a second claim is invisible here; `auditExecutionWitness` sees it.
 */
export function duplicateExecutionAttempts(db: Db): Promise<string[]> {
  return ids(
    db,
    sql`
      select attempt_id as id from attempt_transitions where event in ('claimed', 'released')
      group by attempt_id
      having count(*) filter (where event = 'claimed') - count(*) filter (where event = 'released') > 1
      order by attempt_id
    `,
  )
}

/**
 * Attempts named by audit rows (`attempt_transitions`) that the ledger does not hold: what the
 * foreign key of the audit checked until migration 0011 dropped it.
 */
export function orphanTransitionAttempts(db: Db): Promise<string[]> {
  return ids(
    db,
    sql`
      select distinct t.attempt_id as id from attempt_transitions t
      where not exists (select 1 from attempts a where a.id = t.attempt_id)
      order by t.attempt_id
    `,
  )
}

export interface LedgerInvariants {
  readonly lost: number
  readonly stuck: number
  readonly duplicate_terminal: number
  readonly duplicate_execution: number
  /** Audit rows naming an attempt the ledger does not hold (counted by attempt). */
  readonly orphan_transitions: number
  /** Attempts with a duplicate terminal or a duplicate execution, each counted once. */
  readonly duplicates: number
  /** Up to ten offending attempts with their transitions, one line each. */
  readonly samples: readonly string[]
}

/** Every invariant over the whole ledger; `lost` over the attempts a client got a 202 for. */
export async function auditLedger(
  db: Db,
  acceptedIds: readonly string[],
): Promise<LedgerInvariants> {
  const lost = await lostAttempts(db, acceptedIds)
  const stuck = await stuckAttempts(db)
  const duplicateTerminal = await duplicateTerminalAttempts(db)
  const duplicateExecution = await duplicateExecutionAttempts(db)
  const orphans = await orphanTransitionAttempts(db)
  const offending = [
    ...new Set([...lost, ...stuck, ...duplicateTerminal, ...duplicateExecution, ...orphans]),
  ]
  return {
    lost: lost.length,
    stuck: stuck.length,
    duplicate_terminal: duplicateTerminal.length,
    duplicate_execution: duplicateExecution.length,
    orphan_transitions: orphans.length,
    duplicates: new Set([...duplicateTerminal, ...duplicateExecution]).size,
    samples: await describeAttempts(db, offending.slice(0, 10)),
  }
}

/** One line per attempt: id, status, generation and its transitions with their times. */
export async function describeAttempts(db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return []
  const r = await sql<{ line: string }>`
    select k.id || ' ' || coalesce(a.status, 'missing') || ' gen ' || coalesce(a.owner_generation::text, '-')
           || ': ' || coalesce(string_agg(t.event || '@' || t.owner_generation || ' '
              || to_char(t.at, 'HH24:MI:SS.MS'), ', ' order by t.id), '') as line
    from unnest(${[...ids]}::uuid[]) as k(id)
    left join attempts a on a.id = k.id
    left join attempt_transitions t on t.attempt_id = k.id
    group by k.id, a.status, a.owner_generation
  `.execute(db)
  return r.rows.map((row) => row.line)
}

/** Counts violations of named checks, keeping the first ten as samples (`check: detail`). */
export function violationTally<C extends string>(checks: Readonly<Record<C, string>>) {
  const violations = new Map<C, number>(Object.keys(checks).map((k) => [k as C, 0]))
  const samples: string[] = []
  return {
    violations,
    samples,
    violate: (check: C, detail: string): void => {
      violations.set(check, (violations.get(check) ?? 0) + 1)
      if (samples.length < 10) samples.push(`${check}: ${detail}`)
    },
    bad: (): number => [...violations.values()].reduce((a, b) => a + b, 0),
  }
}

/** Each witness check's name, with what a violation of it means. */
export const WITNESS_CHECKS = {
  duplicate_start: 'a child of one attempt was started more than once',
  start_without_claim: 'a child was started for an attempt the ledger never claimed (or for none)',
  missing_start: 'the ledger says a child completed, but no start of it was witnessed',
} as const
export type WitnessCheck = keyof typeof WITNESS_CHECKS

/** What an audit of named checks found. */
export interface CheckResults<C extends string> {
  readonly violations: ReadonlyMap<C, number>
  /** The sum of all violations: 0 when every check passed. */
  readonly bad: number
  /** Up to ten violations, one line each. */
  readonly samples: readonly string[]
}

export interface WitnessAudit extends CheckResults<WitnessCheck> {
  /** Attempts of the witnessed subagent in the ledger. */
  readonly attempts: number
  /** Witnessed starts. */
  readonly starts: number
}

/**
 * Checks the ledger against a record of execution kept outside it. `starts` counts, per token,
 * the starts the witnessed children recorded; a token is the whole prompt of one attempt of the
 * subagent `agentName`, so each start maps to exactly one attempt. Every start must belong to an
 * attempt the ledger claimed, no attempt may have started twice, and every attempt whose child
 * completed must have started exactly once. An attempt that was claimed and ended otherwise
 * (aborted, lost with its worker) may have started or not: that is the claim's race with the fault.
 */
export async function auditExecutionWitness(
  db: Db,
  agentName: string,
  starts: ReadonlyMap<string, number>,
): Promise<WitnessAudit> {
  const { violations, samples, violate, bad } = violationTally(WITNESS_CHECKS)
  const r = await sql<{ id: string; token: string; stop_reason: string | null; claims: number }>`
    select a.id,
           -- A prompt is stored as sent: a string, or text blocks.
           case jsonb_typeof(a.prompt) when 'string' then a.prompt #>> '{}'
             else (select string_agg(b ->> 'text', '') from jsonb_array_elements(a.prompt) b)
           end as token,
           a.stop_reason,
           (select count(*)::int from attempt_transitions t
            where t.attempt_id = a.id and t.event = 'claimed') as claims
    from attempts a join agents g on g.id = a.agent_id
    where g.name = ${agentName}
  `.execute(db)
  const byToken = new Map(r.rows.map((row) => [row.token, row]))
  for (const [token, n] of starts) {
    const attempt = byToken.get(token)
    if (n > 1)
      violate('duplicate_start', `${token} (attempt ${attempt?.id ?? 'none'}): ${n} starts`)
    if (attempt === undefined || attempt.claims === 0)
      violate('start_without_claim', `${token} (attempt ${attempt?.id ?? 'none'}) started`)
  }
  for (const row of r.rows)
    if (row.stop_reason === 'completed' && (starts.get(row.token) ?? 0) === 0)
      violate('missing_start', `${row.token} (attempt ${row.id}) completed`)
  return {
    attempts: r.rows.length,
    starts: [...starts.values()].reduce((a, b) => a + b, 0),
    violations,
    bad: bad(),
    samples,
  }
}

/**
 * The continuation ledger, for the kill tests and chaos: over every terminal attempt whose parent
 * run has ended, how many continuations were admitted, delivered and suppressed, and the
 * violations, each of which must be 0:
 * - `duplicate`: attempts delivered more than once — more than one continuation row or run for
 *   them, or more than one completed run that consumed them (a completed continuation run besides
 *   the run the delivery names);
 * - `missing`: attempts with neither a continuation nor a recorded suppression (no row, still held
 *   for an ended run, or a suppression without its reason);
 * - `expiredBytes`: attempts whose artifact expired while a copy of its content remains: a
 *   continuation's input embedding it as `base64`, or a chunk of it left in `artifact_chunks`;
 * - `unreceipted`: deliveries without a receipt that binds their input (the receipt's digest is not
 *   the stored one, or the stored one is not the input's), or without a completed consumer.
 */
export interface ContinuationAudit {
  readonly admitted: number
  readonly delivered: number
  readonly suppressed: number
  readonly duplicate: number
  readonly missing: number
  readonly expiredBytes: number
  readonly unreceipted: number
  /** The offending attempt ids (in the order above), at most ten. */
  readonly samples: readonly string[]
}

/** Run statuses after which a run holds nothing any more. */
const ENDED = sql`('completed', 'failed', 'cancelled', 'abandoned')`

export async function auditContinuations(
  db: Db,
  /** Only these sessions (a test's own); all when absent. */
  sessionIds?: readonly string[],
): Promise<ContinuationAudit> {
  const inScope = (column: RawBuilder<unknown>) =>
    sessionIds === undefined ? sql`true` : sql`${column} = any(${[...sessionIds]}::text[])`
  const counts = await sql<{ admitted: number; delivered: number; suppressed: number }>`
    select count(c.attempt_id)::int as admitted,
           count(*) filter (where c.state = 'delivered')::int as delivered,
           count(*) filter (where c.state = 'suppressed')::int as suppressed
    from attempts a
    join runs p on p.id = a.parent_run_id and p.status in ${ENDED}
    join continuations c on c.attempt_id = a.id
    where a.status = 'terminal' and ${inScope(sql.ref('a.session_id'))}
  `.execute(db)
  const duplicate = await ids(
    db,
    sql`
      select cause_attempt_id as id from runs
      where cause_attempt_id is not null and ${inScope(sql.ref('session_id'))}
      group by cause_attempt_id having count(*) > 1
      union
      select attempt_id from continuations where ${inScope(sql.ref('session_id'))}
      group by attempt_id having count(*) > 1
      union
      select c.attempt_id from continuations c
      join runs r on r.cause_attempt_id = c.attempt_id and r.status = 'completed'
      where ${inScope(sql.ref('c.session_id'))}
        and (c.state <> 'delivered' or c.consumer_run_id <> r.id)
    `,
  )
  const missing = await ids(
    db,
    sql`
      select a.id from attempts a
      join runs p on p.id = a.parent_run_id and p.status in ${ENDED}
      left join continuations c on c.attempt_id = a.id
      where a.status = 'terminal' and ${inScope(sql.ref('a.session_id'))}
        and (c.attempt_id is null
             or (c.state = 'held' and c.consumer_run_id = p.id)
             or (c.state = 'suppressed' and c.suppression_reason is null))
    `,
  )
  const expiredBytes = await ids(
    db,
    sql`
      select c.attempt_id as id from continuations c
      join attempts a on a.id = c.attempt_id
      join artifacts ar on ar.id = a.artifact_id and ar.expired_at is not null
      where ${inScope(sql.ref('c.session_id'))}
        and (strpos(c.input, '"base64":') > 0
             or exists (select 1 from artifact_chunks k where k.upload_id = ar.upload_id))
    `,
  )
  const unreceipted = await ids(
    db,
    sql`
      select c.attempt_id as id from continuations c
      left join runs r on r.id = c.consumer_run_id
      where c.state = 'delivered' and ${inScope(sql.ref('c.session_id'))}
        and ((c.receipt::jsonb ->> 'attemptId') is distinct from c.attempt_id::text
             or (c.receipt::jsonb ->> 'inputDigest') is distinct from c.input_digest
             or (not c.input_embedded_content
                 and c.input_digest <> baton_continuation_digest(c.input))
             or r.status is distinct from 'completed')
    `,
  )
  const row = counts.rows[0] ?? { admitted: 0, delivered: 0, suppressed: 0 }
  return {
    ...row,
    duplicate: duplicate.length,
    missing: missing.length,
    expiredBytes: expiredBytes.length,
    unreceipted: unreceipted.length,
    samples: [...duplicate, ...missing, ...expiredBytes, ...unreceipted].slice(0, 10),
  }
}

/** Each artifact check's name, with what a violation of it means. */
export const ARTIFACT_CHECKS = {
  content_digest: "an artifact's stored content does not match its digest or size",
  binding: "an attempt's digest or size differs from its artifact's, or an artifact is unbound",
  usage: "a namespace's usage differs from the bytes of its artifacts with content",
  expired_bytes: "an expired artifact's chunks are still stored",
  stray_chunks: 'chunks of neither an artifact nor an upload waiting for its commit',
} as const
export type ArtifactCheck = keyof typeof ARTIFACT_CHECKS

export interface ArtifactAudit extends CheckResults<ArtifactCheck> {
  /** Artifacts in the ledger, expired or not. */
  readonly artifacts: number
  /** Artifacts whose content was loaded and verified against its digest. */
  readonly verified: number
}

/**
 * Checks every artifact: its content (while present) is re-read and verified against its digest
 * by the store's own load; the attempt that binds it carries the same digest and size; each
 * namespace's usage equals the bytes of its artifacts whose content is still stored; no chunk of
 * an expired artifact is left, and no chunk belongs to nothing.
 */
export async function auditArtifacts(db: Db): Promise<ArtifactAudit> {
  const { violations, samples, violate, bad } = violationTally(ARTIFACT_CHECKS)
  const r = await sql<{ id: string; namespace_id: string; content_kept: boolean; bound: boolean }>`
    select ar.id, ar.namespace_id, ar.expired_at is null as content_kept,
           coalesce(a.artifact_id = ar.id and a.output_digest = ar.digest
                    and a.output_bytes = ar.bytes, false) as bound
    from artifacts ar left join attempts a on a.id = ar.attempt_id
  `.execute(db)
  let verified = 0
  for (const row of r.rows) {
    if (!row.bound) violate('binding', `artifact ${row.id}`)
    if (!row.content_kept) continue
    const load = await loadArtifact(db, row.namespace_id, row.id)
    if (load.kind === 'corrupt') violate('content_digest', `artifact ${row.id}`)
    if (load.kind === 'content') verified += 1
  }
  const usage = await sql<{ namespace_id: string; recorded: string; stored: string }>`
    select coalesce(u.namespace_id, s.namespace_id) as namespace_id,
           coalesce(u.artifact_bytes, 0) as recorded, coalesce(s.bytes, 0) as stored
    from namespace_usage u
    full join (select namespace_id, sum(bytes) as bytes from artifacts
               where expired_at is null group by namespace_id) s
      on s.namespace_id = u.namespace_id
    where coalesce(u.artifact_bytes, 0) <> coalesce(s.bytes, 0)
  `.execute(db)
  for (const row of usage.rows)
    violate('usage', `${row.namespace_id}: recorded ${row.recorded}, stored ${row.stored}`)
  const leftovers = await sql<{ id: string; kind: 'expired_bytes' | 'stray_chunks' }>`
    select distinct ar.id::text, 'expired_bytes' as kind
    from artifacts ar join artifact_chunks c on c.upload_id = ar.upload_id
    where ar.expired_at is not null
    union all
    select distinct c.upload_id::text, 'stray_chunks' from artifact_chunks c
    where not exists (select 1 from artifacts ar where ar.upload_id = c.upload_id)
      and not exists (select 1 from artifact_uploads u where u.id = c.upload_id)
  `.execute(db)
  for (const row of leftovers.rows) violate(row.kind, `upload or artifact ${row.id}`)
  return { artifacts: r.rows.length, verified, violations, bad: bad(), samples }
}

/** Each hosted-session check's name, with what a violation of it means. */
export const HOSTED_CHECKS = {
  overlapping_runs:
    "a run of a session started while another of its runs was active (the session's run_started/run_ended transitions overlap)",
  continuation_missing:
    'a result whose parent run ended has neither one continuation run its receipt names nor a recorded suppression',
  continuation_duplicate:
    'a result has more than one continuation run, or was queued more than once',
  conversation_gap: "a session's conversation is not exactly seq 0..n-1",
  conversation_foreign: 'a conversation event belongs to no run of the session',
  conversation_order:
    "a run's turn does not start where the runs that started before it left the conversation (a gap, an overlap, a turn lost)",
  conversation_stream:
    "the session's event stream does not carry the conversation byte for byte, once each, in order",
  conversation_recall:
    'a completed run of a recalling parent did not answer with the user messages of the conversation up to its own turn',
} as const
export type HostedCheck = keyof typeof HOSTED_CHECKS

export interface HostedAudit extends CheckResults<HostedCheck> {
  /** Hosted sessions (sessions with a profile) audited. */
  readonly sessions: number
  /** Their runs: user runs and continuation runs. */
  readonly runs: number
  readonly continuationRuns: number
  /** Results of children whose parent run ended: each must get one continuation run. */
  readonly results: number
  /** Of those, the results that landed after their parent run had ended. */
  readonly lateResults: number
  /** Events of the sessions' conversations (their parent agents' histories). */
  readonly conversationEvents: number
}

/** A history event's text as a user message (as the scripted `recall` step reads it), or none. */
export function userMessageText(event: unknown): string | undefined {
  const e = event as {
    type?: string
    message?: { role?: string; content?: string | { type?: string; text?: string }[] }
  }
  if (e?.type !== 'message' || e.message?.role !== 'user') return undefined
  const content = e.message.content
  if (typeof content === 'string') return content
  const texts = (content ?? []).flatMap((p) => (p.type === 'text' ? [p.text ?? ''] : []))
  return texts.length === 0 ? undefined : texts.join('')
}

/**
 * Audits hosted sessions from the ledger's own records:
 * - one run at a time: replays each session's `run_started` / `run_ended` events (written in the
 *   transactions that move a run's status, in the session's commit order) and counts each start
 *   while another run of the session is active;
 * - one continuation run per result: every terminal child of an ended run of the session has
 *   exactly one `async_subagent_result` run (queued once) that its continuation's receipt names,
 *   or a suppression with its reason; `lateResults` counts those whose child ended after the run;
 * - the conversation (the parent agent's history, migration 0040): seq 0..n-1, every event a run
 *   of the session's, each run's turn appended exactly where the runs that started before it
 *   ended (so each run's recorded conversation holds every earlier run's turn), and the session's
 *   event stream carrying it byte for byte (migration 0041). For parents whose profile is in
 *   `recalling` (a model that answers with the user messages it was given), each completed run's
 *   answer must be the conversation's user messages up to and including its own turn.
 */
export async function auditHostedSessions(
  db: Db,
  options: {
    /** Only these sessions (a test's own); every hosted session when absent. */
    readonly sessionIds?: readonly string[]
    readonly recalling?: readonly string[]
  } = {},
): Promise<HostedAudit> {
  const { violations, samples, violate, bad } = violationTally(HOSTED_CHECKS)
  const scope =
    options.sessionIds === undefined
      ? sql`true`
      : sql`s.id = any(${[...options.sessionIds]}::text[])`
  const hosted = sql`sessions s on s.namespace_id = x.namespace_id and s.id = x.session_id
                     and s.profile is not null and ${scope}`
  const key = (ns: string, session: string) => `${ns}/${session}`

  const sessions = await sql<{ n: number }>`
    select count(*)::int as n from sessions s where s.profile is not null and ${scope}
  `.execute(db)

  // One run at a time, replayed in each session's commit order.
  const transitions = await sql<{ ns: string; session: string; kind: string; run_id: string }>`
    select x.namespace_id as ns, x.session_id as session, x.kind, x.run_id
    from session_events x join ${hosted}
    where x.kind in ('run_started', 'run_ended')
    order by x.namespace_id, x.session_id, x.seq
  `.execute(db)
  let current = ''
  const active = new Set<string>()
  for (const t of transitions.rows) {
    if (key(t.ns, t.session) !== current) {
      current = key(t.ns, t.session)
      active.clear()
    }
    if (t.kind === 'run_ended') active.delete(t.run_id)
    else {
      if (active.size > 0)
        violate(
          'overlapping_runs',
          `${current}: run ${t.run_id} started while ${[...active].join(', ')} active`,
        )
      active.add(t.run_id)
    }
  }

  // One continuation run per result of an ended run.
  const results = await sql<{
    id: string
    runs: number
    queued: number
    run_id: string | null
    consumer_run_id: string | null
    receipt_attempt: string | null
    state: string | null
    suppression_reason: string | null
    late: boolean
  }>`
    select x.id,
           (select count(*)::int from runs r where r.cause_attempt_id = x.id) as runs,
           (select count(*)::int from session_events q
            where q.namespace_id = x.namespace_id and q.session_id = x.session_id
              and q.kind = 'run_queued' and q.payload ->> 'causeAttemptId' = x.id::text) as queued,
           (select min(r.id::text) from runs r where r.cause_attempt_id = x.id) as run_id,
           c.consumer_run_id, c.receipt::jsonb ->> 'attemptId' as receipt_attempt, c.state,
           c.suppression_reason,
           coalesce((select max(e.seq) from session_events e
                     where e.namespace_id = x.namespace_id and e.session_id = x.session_id
                       and e.run_id = p.id and e.kind in ('subagent_completed', 'subagent_failed')
                       and e.payload ->> 'attemptId' = x.id::text)
                    > (select min(e.seq) from session_events e
                       where e.namespace_id = x.namespace_id and e.session_id = x.session_id
                         and e.run_id = p.id and e.kind = 'run_ended'), false) as late
    from attempts x join ${hosted}
    join runs p on p.id = x.parent_run_id and p.hosted and p.status in ${ENDED}
    left join continuations c on c.attempt_id = x.id
    where x.status = 'terminal'
  `.execute(db)
  for (const r of results.rows) {
    const detail = `result ${r.id}: ${r.runs} runs, queued ${r.queued}, continuation ${r.state ?? 'none'}`
    if (r.runs > 1 || r.queued > 1) violate('continuation_duplicate', detail)
    else if (
      r.runs === 0
        ? r.state !== 'suppressed' || r.suppression_reason === null
        : r.consumer_run_id !== r.run_id || r.receipt_attempt !== r.id
    )
      violate('continuation_missing', detail)
  }

  // The conversations, their runs' bindings and the streams that carry them.
  const events = await sql<{
    ns: string
    session: string
    seq: number
    attempt_id: string
    event: string
    of_run: boolean
  }>`
    select s.namespace_id as ns, s.id as session, e.seq, e.attempt_id, e.event::text as event,
           exists (select 1 from runs r where r.id = e.attempt_id and r.namespace_id = s.namespace_id
                   and r.session_id = s.id) as of_run
    from sessions s join agent_context_events e on e.agent_id = s.parent_agent_id
    where s.profile is not null and ${scope}
    order by s.namespace_id, s.id, e.seq
  `.execute(db)
  const records = await sql<{ ns: string; session: string; run_id: string | null; event: string }>`
    select x.namespace_id as ns, x.session_id as session, x.run_id, x.payload::text as event
    from session_events x join ${hosted}
    where x.kind = 'record' and x.source is null
    order by x.namespace_id, x.session_id, x.seq
  `.execute(db)
  const runs = await sql<{
    ns: string
    session: string
    profile: string
    id: string
    trigger_type: string
    started: number | null
    context_base: number | null
    context_event_count: number | null
    stop_reason: string | null
    output_preview: string | null
    output_truncated: boolean | null
  }>`
    select x.namespace_id as ns, x.session_id as session, s.profile, x.id, x.trigger_type,
           (select min(e.seq)::int from session_events e
            where e.namespace_id = x.namespace_id and e.session_id = x.session_id
              and e.run_id = x.id and e.kind = 'run_started') as started,
           a.context_base, a.context_event_count, a.stop_reason, a.output_preview,
           a.output_truncated
    from runs x join ${hosted}
    left join attempts a on a.id = x.id
    where x.hosted
  `.execute(db)
  const group = <T extends { ns: string; session: string }>(rows: readonly T[]) => {
    const by = new Map<string, T[]>()
    for (const row of rows) {
      const k = key(row.ns, row.session)
      by.set(k, [...(by.get(k) ?? []), row])
    }
    return by
  }
  const eventsBy = group(events.rows)
  const recordsBy = group(records.rows)
  const recalling = new Set(options.recalling ?? [])
  for (const [session, own] of group(runs.rows)) {
    const conversation = eventsBy.get(session) ?? []
    const gap = conversation.findIndex((e, i) => e.seq !== i)
    if (gap !== -1)
      violate('conversation_gap', `${session}: seq ${conversation[gap]?.seq} at position ${gap}`)
    for (const e of conversation)
      if (!e.of_run)
        violate('conversation_foreign', `${session} seq ${e.seq}: attempt ${e.attempt_id}`)
    // Each run's turn starts where the runs that started before it left the conversation.
    let length = 0
    for (const run of own
      .filter((r) => (r.context_event_count ?? 0) > 0 || r.stop_reason === 'completed')
      .sort((a, b) => (a.started ?? Infinity) - (b.started ?? Infinity))) {
      const count = run.context_event_count ?? 0
      const mine = conversation.filter((e) => e.attempt_id === run.id)
      if (
        run.started === null ||
        run.context_base !== length ||
        count === 0 ||
        mine.length !== count ||
        mine.some((e, i) => e.seq !== length + i)
      )
        violate(
          'conversation_order',
          `${session} run ${run.id}: base ${run.context_base ?? '-'} count ${count}, ` +
            `expected base ${length}; ${mine.length} events stored`,
        )
      length = Math.max(length, (run.context_base ?? length) + count)
      if (
        recalling.has(run.profile) &&
        run.stop_reason === 'completed' &&
        run.output_truncated !== true &&
        run.context_base !== null
      ) {
        const upTo = run.context_base + count
        const expected = conversation
          .filter((e) => e.seq < upTo)
          .flatMap((e) => userMessageText(JSON.parse(e.event)) ?? [])
          .join('\n')
        if (run.output_preview !== expected)
          violate(
            'conversation_recall',
            `${session} run ${run.id}: answered ${JSON.stringify(run.output_preview)}, ` +
              `the conversation says ${JSON.stringify(expected)}`,
          )
      }
    }
    // The stream's parent records: the conversation, byte for byte, once each, in order.
    const stream = recordsBy.get(session) ?? []
    const differ = stream.findIndex(
      (r, i) => r.event !== conversation[i]?.event || r.run_id !== conversation[i]?.attempt_id,
    )
    if (stream.length !== conversation.length || differ !== -1)
      violate(
        'conversation_stream',
        `${session}: ${stream.length} records for ${conversation.length} events` +
          (differ === -1 ? '' : `, first difference at ${differ}`),
      )
  }

  return {
    sessions: sessions.rows[0]?.n ?? 0,
    runs: runs.rows.length,
    continuationRuns: runs.rows.filter((r) => r.trigger_type === 'async_subagent_result').length,
    results: results.rows.length,
    lateResults: results.rows.filter((r) => r.late).length,
    conversationEvents: events.rows.length,
    violations,
    bad: bad(),
    samples,
  }
}
