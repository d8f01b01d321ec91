import { sql } from 'kysely'
import type { Db } from '../db.ts'

export type RecordSteeringOutcome =
  | { readonly kind: 'recorded'; readonly sequence: number }
  | { readonly kind: 'terminal' }
  | { readonly kind: 'missing' }

/**
 * Record a steering message, before it is announced. Inputs: attempt id, content blocks.
 * One statement takes the next `steer_sequence` under the attempt's row lock (only while the
 * attempt is not terminal) and inserts the message with it, so concurrent steers get distinct,
 * gap-free sequence numbers in commit order.
 * Outcomes: recorded (with its sequence) | terminal | missing — the last two write nothing.
 * Retry safety: a retry records a second message; callers retry only on a failed request.
 */
export async function recordSteering(
  db: Db,
  input: { readonly attemptId: string; readonly content: unknown },
): Promise<RecordSteeringOutcome> {
  const result = await sql<{ sequence: number | null; status: string | null }>`
    with s as (
      update attempts set steer_sequence = steer_sequence + 1
      where id = ${input.attemptId} and status <> 'terminal'
      returning id, session_id, steer_sequence
    ), m as (
      insert into attempt_messages (attempt_id, session_id, sequence, content)
      select id, session_id, steer_sequence, ${JSON.stringify(input.content)}::jsonb from s
    )
    select (select steer_sequence from s) as sequence,
           (select status from attempts where id = ${input.attemptId}) as status
  `.execute(db)
  const row = result.rows[0]
  if (row?.sequence !== null && row?.sequence !== undefined)
    return { kind: 'recorded', sequence: row.sequence }
  return row?.status === null || row?.status === undefined
    ? { kind: 'missing' }
    : { kind: 'terminal' }
}

export interface SteeringMessage {
  readonly sequence: number
  readonly content: unknown
}

/** Undelivered messages of an attempt after `afterSequence`, in sequence order. */
export async function findUndeliveredSteering(
  db: Db,
  input: { readonly attemptId: string; readonly afterSequence: number },
): Promise<SteeringMessage[]> {
  const result = await sql<{ sequence: number; content: unknown }>`
    select sequence, content from attempt_messages
    where attempt_id = ${input.attemptId} and delivered_at is null and sequence > ${input.afterSequence}
    order by sequence
  `.execute(db)
  return result.rows
}

/**
 * Mark messages up to `throughSequence` delivered. Fenced by ownership: only the attempt's current
 * owner at its generation, while running and while its lease is live on the database clock, can
 * mark; a stale or expired owner marks nothing (and its run was aborted), so the messages stay
 * undelivered. Returns how many rows it marked. Retry safety: marking twice marks nothing more.
 */
export async function markSteeringDelivered(
  db: Db,
  input: {
    readonly attemptId: string
    readonly ownerId: string
    readonly ownerGeneration: number
    readonly throughSequence: number
  },
): Promise<number> {
  const result = await sql`
    update attempt_messages m set delivered_at = now()
    from attempts a
    where m.attempt_id = ${input.attemptId} and m.sequence <= ${input.throughSequence} and m.delivered_at is null
      and a.id = m.attempt_id and a.status = 'running'
      and a.owner_id = ${input.ownerId} and a.owner_generation = ${input.ownerGeneration}
      and a.lease_expires_at > now()
  `.execute(db)
  return Number(result.numAffectedRows ?? 0n)
}
