import { sql, type Kysely } from 'kysely'

/**
 * Keeps the planner's statistics of `attempts` current as its queue changes shape.
 *
 * The fenced statements find their attempts by id, but each connection keeps one generic plan
 * per statement, made from the statistics of the moment. While they say few attempts are
 * accepted, the claim's plan reads `attempts_accepted_idx` whole and joins it to the ids; a burst
 * that leaves tens of thousands queued then makes every claim read the whole backlog, many
 * times what a claim costs once the table is analyzed. The same holds for commits and lease
 * renewals over `attempts_running_lease_idx` when many attempts run at once. Autovacuum's default
 * threshold (10 % of the table changed) never fires for a burst that is a few percent of a long
 * history.
 *
 * Here autovacuum analyzes `attempts` once 5,000 rows changed (inserts and updates: three per
 * delegation), whatever its size: within one autovacuum round (a minute by default) of a burst.
 * The analyze invalidates the cached plans, and the next run of each statement plans again on
 * the fresh statistics, which see the backlog and find the ids through the primary key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table attempts
      set (autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000)
  `.execute(db)
}
