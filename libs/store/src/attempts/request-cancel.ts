import { FailureCategory } from '@baton/contracts'
import { sql } from 'kysely'
import type { Db } from '../db.ts'
import {
  SET_TERMINAL_FROM_INPUT,
  buildTerminalProjection,
  terminalInput,
} from './terminal-record.ts'

export type RequestCancelOutcome =
  /** The attempt was still queued: it is now terminal `aborted` and will never run. */
  | { readonly kind: 'cancelled_queued' }
  /** The attempt is running: the request is recorded; its owner aborts the child. */
  | { readonly kind: 'cancel_requested' }
  /** Already terminal before this request. Nothing written. */
  | { readonly kind: 'terminal' }
  | { readonly kind: 'missing' }

/**
 * Record a cancel request in the ledger, before anyone is told.
 * Inputs: attempt id, optional reason. One statement either commits a queued (`accepted`)
 * attempt straight to terminal `aborted` (generation 0, nobody owns it) or flags a running one.
 * A claim racing with it serialises on the row lock; when the row changed under the statement's
 * snapshot neither branch applies, and the statement is simply run again on a fresh snapshot.
 * Outcomes: cancelled_queued | cancel_requested | terminal | missing.
 * Retry safety: repeating a request keeps the first request time and reason.
 */
export async function requestCancel(
  db: Db,
  input: { readonly attemptId: string; readonly reason: string | null },
): Promise<RequestCancelOutcome> {
  const { projection: p, fingerprint } = buildTerminalProjection(input.attemptId, 0, {
    stopReason: 'aborted',
    output: '',
    failureCategory: FailureCategory.Cancelled,
  })
  for (let round = 0; round < 3; round += 1) {
    const result = await sql<{ queued: number; running: number; status: string | null }>`
      with i as (${terminalInput([{ projection: p, fingerprint, ownerId: null }])}),
      q as (
        update attempts a
        set ${SET_TERMINAL_FROM_INPUT},
            cancel_requested_at = now(),
            cancel_reason = ${input.reason}
        from i
        where a.id = i.id and a.status = 'accepted'
        returning a.id
      ), r as (
        update attempts
        set cancel_requested_at = coalesce(cancel_requested_at, now()),
            cancel_reason = coalesce(cancel_reason, ${input.reason})
        where id = ${input.attemptId} and status = 'running'
        returning id, owner_id, owner_generation
      ), t as (
        insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id, owner_generation)
        select id, 'accepted', 'terminal', 'cancelled_queued', null, 0 from q
        union all
        select id, 'running', 'running', 'cancel_requested', owner_id, owner_generation from r
      )
      select (select count(*)::int from q) as queued,
             (select count(*)::int from r) as running,
             (select status from attempts where id = ${input.attemptId}) as status
    `.execute(db)
    const row = result.rows[0]
    if (row === undefined) throw new Error('requestCancel: statement returned no row')
    if (row.queued === 1) return { kind: 'cancelled_queued' }
    if (row.running === 1) return { kind: 'cancel_requested' }
    if (row.status === null) return { kind: 'missing' }
    if (row.status === 'terminal') return { kind: 'terminal' }
    // The row moved between snapshot and lock (a concurrent claim): run again on a fresh snapshot.
  }
  throw new Error('requestCancel: attempt kept changing under the statement')
}
