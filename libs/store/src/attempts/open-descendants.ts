import { sql } from 'kysely'
import type { Db } from '../db.ts'

/**
 * The attempts below a run that have not finished: those the run delegated (naming it as their
 * parent run, or — a hosted run's attempt has the run's id — as their parent attempt), and down
 * the tree those each of them delegated (`parent_attempt_id`), finished or not on the way. What a
 * cascade cancel of the run reaches. Read-only; scoped by the namespace.
 */
export async function openDescendants(
  db: Db,
  input: { readonly namespaceId: string; readonly runId: string },
): Promise<string[]> {
  const result = await sql<{ id: string }>`
    with recursive tree (id, status) as (
      select a.id, a.status from attempts a
      where a.namespace_id = ${input.namespaceId}
        and (a.parent_run_id = ${input.runId}::uuid or a.parent_attempt_id = ${input.runId}::uuid)
      union
      select c.id, c.status from attempts c join tree t on c.parent_attempt_id = t.id
      where c.namespace_id = ${input.namespaceId}
    )
    select id from tree where status <> 'terminal' and id <> ${input.runId}::uuid
  `.execute(db)
  return result.rows.map((r) => r.id)
}
