import { FailureCategory, type ClaimableDetail } from '@baton/contracts'
import { sql } from 'kysely'
import type { Db } from '../db.ts'
import {
  SET_TERMINAL_FROM_INPUT,
  buildTerminalProjection,
  terminalInput,
} from './terminal-record.ts'

export interface RequestCancelInput {
  readonly attemptId: string
  readonly reason: string | null
  /** The caller's namespace: an attempt of another namespace is `missing`. Absent: any. */
  readonly namespaceId?: string | undefined
}

export type RequestCancelOutcome =
  /**
   * The attempt was still queued: it is now terminal `aborted` and will never run. With a parent
   * run, the session its result goes back to (the statement admitted or held it).
   */
  | { readonly kind: 'cancelled_queued'; readonly parentSession?: ClaimableDetail }
  /** The attempt is running: the request is recorded; its owner aborts the child. */
  | { readonly kind: 'cancel_requested' }
  /** Already terminal before this request. Nothing written. */
  | { readonly kind: 'terminal' }
  | { readonly kind: 'missing' }

/** Rounds on a fresh snapshot before a request whose row keeps changing is an error. */
const MAX_ROUNDS = 3

/**
 * Record cancel requests in the ledger, before anyone is told, many in one statement.
 * Inputs: attempt ids with optional reasons (the same id twice is allowed: the first reason is
 * kept, and the requests answer as if made one after another). The statement either commits a
 * queued (`accepted`) attempt straight to terminal `aborted` (generation 0, nobody owns it) or
 * flags a running one, and appends the audit row. A claim racing with it serialises on the row
 * lock; when a row changed under the statement's snapshot neither branch applies to it, and the
 * statement is run again for those ids only, on a fresh snapshot. A queued attempt's terminal
 * fingerprint binds its trace id, as a worker's commit and a process loss do: each round first
 * reads which of its attempts are queued, with their trace ids, and builds terminal projections
 * for those only (one handed back to the queue meanwhile is run again in the next round).
 * Outcomes per id: cancelled_queued | cancel_requested | terminal | missing.
 * Retry safety: repeating a request keeps the first request time and reason.
 */
export async function requestCancels(
  db: Db,
  inputs: readonly RequestCancelInput[],
): Promise<RequestCancelOutcome[]> {
  // One request per (namespace, attempt): only the attempt's own namespace can match it.
  const requests = new Map<string, RequestCancelInput>()
  for (const input of inputs) {
    const key = requestKey(input)
    if (!requests.has(key)) requests.set(key, input)
  }
  const decided = new Map<string, RequestCancelOutcome>()
  let open = [...requests.values()]
  for (let round = 0; round < MAX_ROUNDS && open.length > 0; round += 1) {
    const queued = await queuedOf(db, [...new Set(open.map((r) => r.attemptId))])
    // Only a queued attempt is ended here: a running one's outcome is its owner's to commit, so
    // a burst of cancels of running children (a parent stopping its fan-out) neither builds nor
    // sends a terminal projection for them.
    const rows = [...queued].map(([attemptId, traceId]) => {
      const { projection, fingerprint } = buildTerminalProjection(
        attemptId,
        0,
        { stopReason: 'aborted', output: '', failureCategory: FailureCategory.Cancelled },
        { traceId },
      )
      return { projection, fingerprint, ownerId: null }
    })
    const result = await sql<{
      ord: string
      queued: boolean | null
      running: boolean | null
      status: string | null
      parent_session: string | null
      namespace_id: string | null
    }>`
      with i as (${terminalInput(rows)}),
      x as (
        select * from unnest(
          ${open.map((r) => r.attemptId)}::uuid[],
          ${open.map((r) => r.reason)}::text[],
          ${open.map((r) => r.namespaceId ?? null)}::text[]
        ) with ordinality as x(id, reason, namespace_id, ord)
      ), q as (
        update attempts a
        set ${SET_TERMINAL_FROM_INPUT},
            cancel_requested_at = now(),
            cancel_reason = x.reason
        from i join x on x.id = i.id
        where a.id = i.id and a.status = 'accepted'
          and (x.namespace_id is null or a.namespace_id = x.namespace_id)
        returning a.id, a.session_id, a.parent_run_id
      ), r as (
        update attempts a
        set cancel_requested_at = coalesce(a.cancel_requested_at, now()),
            cancel_reason = coalesce(a.cancel_reason, x.reason)
        from x
        where a.id = x.id and a.status = 'running'
          and (x.namespace_id is null or a.namespace_id = x.namespace_id)
        returning a.id, a.session_id, a.owner_id, a.owner_generation
      ), t as (
        insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event,
                                         owner_id, owner_generation)
        select id, session_id, 'accepted', 'terminal', 'cancelled_queued', null, 0 from q
        union all
        select id, session_id, 'running', 'running', 'cancel_requested', owner_id, owner_generation
        from r
      )
      select x.ord,
             a.id in (select id from q) as queued,
             a.id in (select id from r) as running,
             a.status,
             a.namespace_id,
             case when a.id in (select id from q where parent_run_id is not null)
               then a.session_id end as parent_session
      from x left join attempts a
        on a.id = x.id and (x.namespace_id is null or a.namespace_id = x.namespace_id)
      order by x.ord
    `.execute(db)
    const moved: RequestCancelInput[] = []
    for (const row of result.rows) {
      const request = open[Number(row.ord) - 1]
      if (request === undefined) throw new Error('requestCancels: an answer for no request')
      const key = requestKey(request)
      if (row.queued === true)
        decided.set(
          key,
          row.parent_session === null || row.namespace_id === null
            ? { kind: 'cancelled_queued' }
            : {
                kind: 'cancelled_queued',
                parentSession: { namespaceId: row.namespace_id, sessionId: row.parent_session },
              },
        )
      else if (row.running === true) decided.set(key, { kind: 'cancel_requested' })
      else if (row.status === null) decided.set(key, { kind: 'missing' })
      else if (row.status === 'terminal') decided.set(key, { kind: 'terminal' })
      // The row moved between snapshot and lock (a concurrent claim): try it again.
      else moved.push(request)
    }
    open = moved
  }
  if (open.length > 0) {
    throw new Error(
      `requestCancels: attempts kept changing under the statement: ${open.map((r) => r.attemptId).join(', ')}`,
    )
  }
  const answered = new Set<string>()
  return inputs.map((input): RequestCancelOutcome => {
    const key = requestKey(input)
    const outcome = decided.get(key)
    if (outcome === undefined) throw new Error(`requestCancels: no outcome for ${input.attemptId}`)
    const repeat = answered.has(key)
    answered.add(key)
    // A repeated request for a queued attempt finds it terminal, as it would one after another.
    return repeat && outcome.kind === 'cancelled_queued' ? { kind: 'terminal' } : outcome
  })
}

/**
 * Of `attemptIds`, those still queued, each with its delegation's `metadata.traceId` (undefined
 * without one). Read on the round's snapshot: an attempt that is queued again by the time the
 * statement locks it (a claim handed back) has no projection, so neither branch applies to it and
 * the next round reads it afresh.
 */
async function queuedOf(
  db: Db,
  attemptIds: readonly string[],
): Promise<Map<string, string | undefined>> {
  // The status is answered, not filtered on, so each id is read through the primary key rather
  // than the whole queue through the index of queued attempts.
  const read = await sql<{ id: string; queued: boolean; trace_id: string | null }>`
    select id, status = 'accepted' as queued, metadata->>'traceId' as trace_id from attempts
    where id = any(${attemptIds}::uuid[])
  `.execute(db)
  return new Map(read.rows.flatMap((r) => (r.queued ? [[r.id, r.trace_id ?? undefined]] : [])))
}

function requestKey(input: RequestCancelInput): string {
  return JSON.stringify([input.namespaceId ?? null, input.attemptId])
}

/** Record one cancel request: `requestCancels` with a single input. */
export async function requestCancel(
  db: Db,
  input: RequestCancelInput,
): Promise<RequestCancelOutcome> {
  const [outcome] = await requestCancels(db, [input])
  if (outcome === undefined) throw new Error('requestCancels returned no outcome')
  return outcome
}
