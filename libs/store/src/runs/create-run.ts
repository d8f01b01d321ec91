import { sql } from 'kysely'
import type { DeliveredResult } from '@baton/contracts'
import type { Db } from '../db.ts'
import {
  DELIVERY_COLUMNS,
  loadDeliveredResults,
  type DeliveryRow,
} from '../continuations/delivered-results.ts'
import { NotConsumable } from './not-consumable.ts'
import type { RunRow } from '../schema.ts'
import { toRunRecord, type RunRecord } from './get-run.ts'

export interface CreateRunInput {
  readonly namespaceId: string
  readonly sessionId: string
  /** Minted by the caller. */
  readonly runId: string
  /** Suppressed results this run consumes (an `explicit` run); empty for a `user` run. */
  readonly consume: readonly string[]
  /** The run's lease: it lives this long on the database clock unless its host renews it. */
  readonly leaseMs: number
}

export type CreateRunOutcome =
  | {
      readonly kind: 'created'
      readonly run: RunRecord
      /** The results it took, delivered with their receipts (an explicit run). */
      readonly consumed: readonly DeliveredResult[]
    }
  | { readonly kind: 'session_deleted' }
  /** Some results are not suppressed results of this session (or another run took them). */
  | { readonly kind: 'not_consumable'; readonly attemptIds: readonly string[] }

/**
 * Create an active run of a session (creating the session if it is new), in one transaction,
 * with a lease of `leaseMs` on the database clock (`renewRunLease` extends it; once it expires the
 * run is abandoned). With `consume`, the run is `explicit` and claims each named result, which
 * must be `suppressed`: the row update decides, so of two runs naming the same result only one
 * gets it; if any result cannot be claimed nothing is written. The results it took are answered
 * with their receipts and resolved content (`loadDeliveredResults`). The session's row is
 * share-locked against its deletion fence. Outcomes: created | session_deleted | not_consumable.
 * Retry safety: a retry with a fresh run id is a new run; its `consume` is refused once taken.
 */
export async function createRun(db: Db, input: CreateRunInput): Promise<CreateRunOutcome> {
  const consume = [...new Set(input.consume)]
  let created:
    | Extract<CreateRunOutcome, { kind: 'session_deleted' }>
    | {
        readonly run: RunRecord
        readonly taken: readonly DeliveryRow[]
      }
  try {
    created = await db.transaction().execute(async (trx) => {
      const session = await sql<{ deleted: boolean }>`
        with s as (
          insert into sessions (namespace_id, id) values (${input.namespaceId}, ${input.sessionId})
          on conflict (namespace_id, id) do nothing
        )
        select deleted_at is not null as deleted from sessions
        where namespace_id = ${input.namespaceId} and id = ${input.sessionId}
        for share
      `.execute(trx)
      if (session.rows[0]?.deleted === true) return { kind: 'session_deleted' } as const
      const run = await sql<RunRow>`
        insert into runs (id, namespace_id, session_id, trigger_type, status, lease_expires_at)
        values (${input.runId}::uuid, ${input.namespaceId}, ${input.sessionId},
                ${consume.length === 0 ? 'user' : 'explicit'}, 'active',
                now() + ${input.leaseMs} * interval '1 millisecond')
        returning *
      `.execute(trx)
      const row = run.rows[0]
      if (row === undefined) throw new Error('a run insert answered no row')
      if (consume.length === 0) return { run: toRunRecord(row), taken: [] }
      const taken = await sql<DeliveryRow>`
        update continuations
        set state = 'claimed', consumer_run_id = ${input.runId}::uuid,
            claim_generation = null, claim_deadline = null
        where attempt_id = any(${consume}::uuid[]) and namespace_id = ${input.namespaceId}
          and session_id = ${input.sessionId} and state = 'suppressed'
        returning ${sql.join(DELIVERY_COLUMNS.map((c) => sql.ref(c)))}
      `.execute(trx)
      const got = new Set(taken.rows.map((r) => r.attempt_id))
      const refused = consume.filter((id) => !got.has(id))
      if (refused.length > 0) throw new NotConsumable(refused)
      const byId = new Map(taken.rows.map((r) => [r.attempt_id, r]))
      return { run: toRunRecord(row), taken: consume.flatMap((id) => byId.get(id) ?? []) }
    })
  } catch (error) {
    if (error instanceof NotConsumable)
      return { kind: 'not_consumable', attemptIds: error.attemptIds }
    throw error
  }
  if ('kind' in created) return created
  return {
    kind: 'created',
    run: created.run,
    consumed: await loadDeliveredResults(db, input.namespaceId, created.taken),
  }
}
