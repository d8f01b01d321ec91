import { sql } from 'kysely'
import type { Db } from '../db.ts'

/** A claim its owner hands back; without a generation, whichever claim of that owner holds it. */
export interface ClaimToRelease {
  readonly attemptId: string
  readonly ownerGeneration?: number
}

/**
 * Fenced hand-back of claims whose child never started (a worker stopping before it ran them).
 * Inputs: owner id, (attempt id, generation) pairs; a pair without a generation names a claim
 * whose answer the owner never heard. Each applies only while the attempt is `running`, owned by
 * this owner (at this generation when given) under a live lease on the database clock: it goes
 * back to `accepted`, without owner or lease, keeping its bumped generation (so the released
 * owner's writes stay fenced out), with a `released` audit row; the next claim runs it.
 * Outcome: the attempt ids it handed back (the others were lost meanwhile: write nothing for
 * them). Retry safety: a repeat finds the attempt `accepted` and hands back nothing.
 *
 * Only the owner knows that a child never started: the ledger records a claim, not a start, so a
 * caller must release only attempts it has not run.
 */
export async function releaseClaims(
  db: Db,
  input: { readonly ownerId: string; readonly claims: readonly ClaimToRelease[] },
): Promise<string[]> {
  if (input.claims.length === 0) return []
  const result = await sql<{ id: string }>`
    with r as (
      update attempts a
      set status = 'accepted', owner_id = null, lease_expires_at = null, heartbeat_at = null,
          started_at = null
      from unnest(${input.claims.map((c) => c.attemptId)}::uuid[],
                  ${input.claims.map((c) => c.ownerGeneration ?? null)}::int[])
        as i(id, generation)
      where a.id = i.id
        and (i.generation is null or a.owner_generation = i.generation)
        and a.owner_id = ${input.ownerId}
        and a.status = 'running'
        and a.lease_expires_at > now()
      returning a.id, a.session_id, a.owner_generation
    ), t as (
      insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event, owner_id,
                                       owner_generation)
      select id, session_id, 'running', 'accepted', 'released', ${input.ownerId}, owner_generation
      from r
    )
    select id from r
  `.execute(db)
  return result.rows.map((r) => r.id)
}
