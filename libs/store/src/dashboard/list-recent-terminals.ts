import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'

export interface RecentTerminal {
  readonly attemptId: string
  readonly namespaceId: string
  readonly name: string
  readonly stopReason: string | null
  readonly failureCategory: string | null
  readonly terminalAt: Date | null
  /** From the claim to the terminal outcome; null when it never ran (cancelled while queued). */
  readonly durationMs: number | null
  readonly outputBytes: number | null
}

/**
 * The last `limit` attempts to become terminal, across every namespace, newest first. Every path
 * to terminal (commit, queued cancel, process loss) appends a transition in its own statement, so
 * the transitions' primary key, walked backwards over at most `transitionScan` transitions, finds
 * them without scanning attempts.
 */
/**
 * A limit written into the statement rather than bound: the generic plan a connection keeps
 * cannot know a bound limit and plans for a tenth of the transitions, which joins them to every
 * attempt by a scan of the table.
 */
function literalLimit(n: number) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`limit ${n} is not whole`)
  return sql.lit(n)
}

export async function listRecentTerminals(
  db: Db,
  input: { readonly limit: number; readonly transitionScan: number },
): Promise<RecentTerminal[]> {
  const result = await retryTransient(
    () =>
      sql<{
        id: string
        namespace_id: string
        name: string
        stop_reason: string | null
        failure_category: string | null
        terminal_at: Date | null
        duration_ms: number | null
        output_bytes: number | null
      }>`
        select a.id, a.namespace_id, a.name, a.stop_reason, a.failure_category, a.terminal_at,
               (extract(epoch from a.terminal_at - a.started_at) * 1000)::float8 as duration_ms,
               a.output_bytes
        from (select id, attempt_id
              from (select id, attempt_id, to_status from attempt_transitions
                    order by id desc limit ${literalLimit(input.transitionScan)}) recent
              where to_status = 'terminal' order by id desc limit ${literalLimit(input.limit)}) t
        join attempts a on a.id = t.attempt_id
        order by t.id desc
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  return result.rows.map((r) => ({
    attemptId: r.id,
    namespaceId: r.namespace_id,
    name: r.name,
    stopReason: r.stop_reason,
    failureCategory: r.failure_category,
    terminalAt: r.terminal_at,
    durationMs: r.duration_ms,
    outputBytes: r.output_bytes,
  }))
}
