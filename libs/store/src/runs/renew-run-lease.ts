import { sql } from 'kysely'
import type { ClaimFence } from '@baton/contracts'
import type { Db } from '../db.ts'
import { abandonExpiredRuns } from './abandon-runs.ts'
import { getRun, type RunRecord } from './get-run.ts'

export type RenewRunLeaseOutcome =
  | { readonly kind: 'renewed'; readonly leaseExpiresAt: Date }
  /** Another claim holds the run, it ended, or this claim's lease already expired. */
  | { readonly kind: 'stale_claim' }
  /** A host run that is not active (ended; or its lease had expired: now `abandoned`). */
  | { readonly kind: 'not_active'; readonly run: RunRecord }
  | { readonly kind: 'missing' }

/**
 * Extend a run's lease by `leaseMs` from the database's `now()`: the one lease renewal of runs.
 * Inputs: the run, and for a claimed continuation run its claim's fence (a host run has none).
 * Applies only while the run is `active` under that fence (a host run: without an owner) with a
 * live lease: an expired lease cannot revive itself. A claim's delivery deadline is left alone:
 * past it, reconciliation retains the claim for as long as this lease stays live. A host run found
 * with an expired lease is abandoned right here (`abandonExpiredRuns`), as the reconciler would.
 * Outcomes: renewed | stale_claim | not_active | missing. Retry safety: renewing twice only
 * extends the lease.
 */
export async function renewRunLease(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly runId: string
    readonly fence?: ClaimFence
    readonly leaseMs: number
  },
): Promise<RenewRunLeaseOutcome> {
  const fence = input.fence
  const owner =
    fence === undefined
      ? sql`owner_id is null and trigger_type <> 'async_subagent_result'`
      : sql`trigger_type = 'async_subagent_result' and owner_id = ${fence.claimToken}
            and owner_generation = ${fence.generation}`
  const result = await sql<{ lease_expires_at: Date }>`
    update runs
    set lease_expires_at = now() + ${input.leaseMs} * interval '1 millisecond'
    where id = ${input.runId}::uuid and namespace_id = ${input.namespaceId}
      and status = 'active' and lease_expires_at > now() and ${owner}
    returning lease_expires_at
  `.execute(db)
  const renewed = result.rows[0]
  if (renewed !== undefined) return { kind: 'renewed', leaseExpiresAt: renewed.lease_expires_at }
  const run = await getRun(db, input.namespaceId, input.runId)
  if (run === undefined) return { kind: 'missing' }
  if (fence !== undefined || run.triggerType === 'async_subagent_result')
    return { kind: 'stale_claim' }
  if (run.status !== 'active') return { kind: 'not_active', run }
  const { runs } = await abandonExpiredRuns(db, input)
  return {
    kind: 'not_active',
    run: runs[0] ?? (await getRun(db, input.namespaceId, input.runId)) ?? run,
  }
}
