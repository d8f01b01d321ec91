import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'

export interface AttemptStateCount {
  readonly namespaceId: string
  readonly status: 'accepted' | 'running' | 'terminal'
  /** Null unless `status` is terminal. */
  readonly stopReason: string | null
  readonly count: number
}

/**
 * Attempts by state across every namespace, in one bounded statement for a busy ledger:
 * accepted and running attempts through their partial indexes, at most `cap` of each status
 * (reaching it makes the count a lower bound); terminal attempts per stop reason among the last
 * `terminalWindow` terminal transitions, found by walking the transitions' primary key backwards
 * over at most `transitionScan` transitions.
 * The terminal total itself is never counted: it grows without bound.
 */
export async function countAttemptStates(
  db: Db,
  input: { readonly cap: number; readonly terminalWindow: number; readonly transitionScan: number },
): Promise<AttemptStateCount[]> {
  const result = await retryTransient(
    () =>
      sql<{
        namespace_id: string
        status: AttemptStateCount['status']
        stop_reason: string | null
        count: number
      }>`
        select namespace_id, status, stop_reason, count(*)::int as count
        from (
          (select namespace_id, status, null::text as stop_reason
            from attempts where status = 'accepted' limit ${input.cap})
          union all
          (select namespace_id, status, null::text
            from attempts where status = 'running' limit ${input.cap})
          union all
          (select a.namespace_id, 'terminal', a.stop_reason
            from (select attempt_id
                  from (select attempt_id, to_status from attempt_transitions
                        order by id desc limit ${input.transitionScan}) recent
                  where to_status = 'terminal' limit ${input.terminalWindow}) t
            join attempts a on a.id = t.attempt_id)
        ) s
        group by namespace_id, status, stop_reason
        order by namespace_id, status, stop_reason
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  return result.rows.map((r) => ({
    namespaceId: r.namespace_id,
    status: r.status,
    stopReason: r.stop_reason,
    count: r.count,
  }))
}
