import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { NotConsumable } from './not-consumable.ts'
import { toRunRecord, type RunRecord } from './get-run.ts'

export interface CreateRunInput {
  readonly namespaceId: string
  readonly sessionId: string
  /** Minted by the caller. */
  readonly runId: string
  /** Suppressed results this run consumes (an `explicit` run); empty for a `user` run. */
  readonly consume: readonly string[]
}

export type CreateRunOutcome =
  | { readonly kind: 'created'; readonly run: RunRecord }
  | { readonly kind: 'session_deleted' }
  /** Some results are not suppressed results of this session (or another run took them). */
  | { readonly kind: 'not_consumable'; readonly attemptIds: readonly string[] }

/**
 * Create an active run of a session (creating the session if it is new), in one transaction.
 * With `consume`, the run is `explicit` and claims each named result, which must be `suppressed`:
 * the row update decides, so of two runs naming the same result only one gets it; if any result
 * cannot be claimed nothing is written. The session's row is share-locked against its deletion
 * fence. Outcomes: created | session_deleted | not_consumable.
 * Retry safety: a retry with a fresh run id is a new run; its `consume` is refused once taken.
 */
export async function createRun(db: Db, input: CreateRunInput): Promise<CreateRunOutcome> {
  const consume = [...new Set(input.consume)]
  try {
    return await db.transaction().execute(async (trx): Promise<CreateRunOutcome> => {
      const session = await sql<{ deleted: boolean }>`
        with s as (
          insert into sessions (namespace_id, id) values (${input.namespaceId}, ${input.sessionId})
          on conflict (namespace_id, id) do nothing
        )
        select deleted_at is not null as deleted from sessions
        where namespace_id = ${input.namespaceId} and id = ${input.sessionId}
        for share
      `.execute(trx)
      if (session.rows[0]?.deleted === true) return { kind: 'session_deleted' }
      const run = await trx
        .insertInto('runs')
        .values({
          id: input.runId,
          namespace_id: input.namespaceId,
          session_id: input.sessionId,
          trigger_type: consume.length === 0 ? 'user' : 'explicit',
          status: 'active',
          cause_attempt_id: null,
          owner_id: null,
          lease_expires_at: null,
          settled_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      if (consume.length > 0) {
        const taken = await sql<{ attempt_id: string }>`
          update continuations
          set state = 'claimed', consumer_run_id = ${input.runId}::uuid,
              claim_generation = null, claim_deadline = null
          where attempt_id = any(${consume}::uuid[]) and namespace_id = ${input.namespaceId}
            and session_id = ${input.sessionId} and state = 'suppressed'
          returning attempt_id
        `.execute(trx)
        const got = new Set(taken.rows.map((r) => r.attempt_id))
        const refused = consume.filter((id) => !got.has(id))
        if (refused.length > 0) throw new NotConsumable(refused)
      }
      return { kind: 'created', run: toRunRecord(run) }
    })
  } catch (error) {
    if (error instanceof NotConsumable)
      return { kind: 'not_consumable', attemptIds: error.attemptIds }
    throw error
  }
}
