import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { processLossProjection } from './terminal-record.ts'

/**
 * Attempts whose execution started and whose owner's lease expired on the database clock: the
 * owner is presumed dead. They are never run again; they get a synthesized terminal outcome.
 */
export async function findExpiredRunning(
  db: Db,
  input: { readonly limit: number },
): Promise<{ attemptId: string; ownerGeneration: number }[]> {
  const result = await sql<{ id: string; owner_generation: number }>`
    select id, owner_generation from attempts
    where status = 'running' and lease_expires_at <= now()
    order by lease_expires_at
    limit ${input.limit}
  `.execute(db)
  return result.rows.map((r) => ({ attemptId: r.id, ownerGeneration: r.owner_generation }))
}

/**
 * Process-loss terminal commit, batched. Inputs: (attempt id, owner generation) pairs observed
 * expired. Applies only while each attempt is still `running` at that generation with an expired
 * lease, so a renewal that won the race, or another reconciler that got there first, makes it a
 * no-op. The projection and fingerprint follow the same rules as a normal commit, so a late
 * result from the old owner is refused (`stale_fence`/`refused`), never merged.
 * Outcome: the attempt ids this call made terminal. Retry safety: a repeat applies to nothing.
 */
export async function commitProcessLoss(
  db: Db,
  expired: readonly { readonly attemptId: string; readonly ownerGeneration: number }[],
): Promise<string[]> {
  if (expired.length === 0) return []
  const projections = expired.map((e) => processLossProjection(e.attemptId, e.ownerGeneration))
  const first = projections[0]
  if (first === undefined) return []
  const p = first.projection // identical for every row except id, generation and fingerprint
  const result = await sql<{ id: string }>`
    with input as (
      select * from unnest(
        ${expired.map((e) => e.attemptId)}::uuid[],
        ${expired.map((e) => e.ownerGeneration)}::int[],
        ${projections.map((x) => x.fingerprint)}::text[]
      ) as i(id, generation, fingerprint)
    ), c as (
      update attempts a
      set status = 'terminal',
          stop_reason = ${p.stopReason},
          output_preview = ${p.outputPreview},
          output_truncated = ${p.outputTruncated},
          output_bytes = ${p.outputBytes},
          output_digest = ${p.outputDigest},
          failure_category = ${p.failureCategory},
          fingerprint = input.fingerprint,
          terminal_at = now(),
          lease_expires_at = null
      from input
      where a.id = input.id
        and a.owner_generation = input.generation
        and a.status = 'running'
        and a.lease_expires_at <= now()
      returning a.id, a.owner_id, a.owner_generation
    ), t as (
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id, owner_generation)
      select id, 'running', 'terminal', 'process_lost', owner_id, owner_generation from c
    )
    select id from c
  `.execute(db)
  return result.rows.map((r) => r.id)
}
