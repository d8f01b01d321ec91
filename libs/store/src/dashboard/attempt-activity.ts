import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'

/**
 * The index of `time`'s minute in the window (`bounds b`): 0 for a time before the window, and
 * null for none. (`greatest` and `least` skip nulls, so the null is kept by hand.)
 */
function minuteOf(time: RawBuilder<unknown>): RawBuilder<number | null> {
  return sql`case when ${time} is not null
    then least(greatest(floor(extract(epoch from ${time} - b.start) / 60)::int, 0), b.last) end`
}

/** What the ledger shows of one minute, on the database clock. */
export interface MinuteActivity {
  /** The minute's start. */
  readonly minute: Date
  /** Attempts that became terminal within the minute, per stop reason (absent: none). */
  readonly terminals: Readonly<Record<string, number>>
  /** Attempts accepted and not yet running at the minute's end (the current minute: now). */
  readonly queued: number
  /** Attempts running at the minute's end (the current minute: now). */
  readonly running: number
  /**
   * From accept to terminal, for the attempts that became terminal within the minute: the
   * median and the 99th percentile (interpolated), in milliseconds; null when none did.
   */
  readonly waitP50Ms: number | null
  readonly waitP99Ms: number | null
}

/**
 * The last `minutes` minutes of the ledger, one entry per minute, oldest first; the last one is
 * the current minute, still under way. One statement, and bounded by time rather than by history:
 * it reads the attempts that became terminal within the window (`attempts_terminal_at_idx`) and
 * those not terminal yet (the partial indexes of queued and of running attempts), never an
 * attempt that finished before the window. Its cost follows the window's throughput and the
 * current backlog.
 *
 * Every time is placed in its minute of the window (a time before the window in the first one).
 * Each attempt adds +1 to a gauge in the minute it entered a state and −1 in the minute it left
 * it; the gauges are the running sums of those steps, so an attempt queued or running for an hour
 * costs two steps, not sixty samples. Reading every row from one snapshot, an attempt is counted
 * once, in the one state that snapshot holds.
 */
export async function readAttemptActivity(
  db: Db,
  input: { readonly minutes: number },
): Promise<{ readonly now: Date; readonly minutes: MinuteActivity[] }> {
  if (!Number.isInteger(input.minutes) || input.minutes < 1) {
    throw new RangeError(
      `readAttemptActivity: minutes must be a positive integer, not ${input.minutes}`,
    )
  }
  // The window's first minute, written into the statement rather than passed as a parameter: the
  // planner then knows how far back the window reaches and estimates the terminal-time index scan
  // from it, however long the history behind it.
  const start = sql`date_trunc('minute', now()) - ${sql.lit(input.minutes - 1)} * interval '1 minute'`
  const result = await retryTransient(
    () =>
      sql<{
        now: Date
        minute: Date
        terminals: Record<string, number>
        queued: number
        running: number
        wait_p50_ms: number | null
        wait_p99_ms: number | null
      }>`
        with bounds as (
          select now() as now, ${start} as start, ${sql.lit(input.minutes - 1)} as last
        ),
        seen as (
          select a.created_at, a.started_at, a.terminal_at, a.stop_reason
          from attempts a where a.terminal_at >= ${start}
          union all
          select created_at, started_at, null, null from attempts where status = 'accepted'
          union all
          select created_at, started_at, null, null from attempts where status = 'running'
        ),
        placed as (
          select s.stop_reason,
                 (extract(epoch from s.terminal_at - s.created_at) * 1000)::float8 as wait_ms,
                 ${minuteOf(sql.ref('s.created_at'))} as created_k,
                 ${minuteOf(sql.ref('s.started_at'))} as started_k,
                 ${minuteOf(sql.ref('s.terminal_at'))} as terminal_k
          from seen s cross join bounds b
        ),
        steps as (
          select d.k, sum(d.queued) as queued, sum(d.running) as running
          from placed p
          cross join lateral (values
            (p.created_k, 1, 0),
            (coalesce(p.started_k, p.terminal_k), -1, 0),
            (p.started_k, 0, 1),
            (case when p.started_k is not null then p.terminal_k end, 0, -1)
          ) d (k, queued, running)
          where d.k is not null
          group by d.k
        ),
        waits as (
          select terminal_k as k,
                 percentile_cont(0.5) within group (order by wait_ms) as p50,
                 percentile_cont(0.99) within group (order by wait_ms) as p99
          from placed where terminal_k is not null
          group by terminal_k
        ),
        outcomes as (
          select k, jsonb_object_agg(stop_reason, n) as terminals
          from (select terminal_k as k, stop_reason, count(*)::int as n
                from placed where terminal_k is not null
                group by terminal_k, stop_reason) o
          group by k
        )
        select b.now, b.start + m.k * interval '1 minute' as minute,
               coalesce(o.terminals, '{}') as terminals,
               (sum(coalesce(s.queued, 0)) over w)::int as queued,
               (sum(coalesce(s.running, 0)) over w)::int as running,
               l.p50 as wait_p50_ms, l.p99 as wait_p99_ms
        from bounds b
        cross join generate_series(0, b.last) m (k)
        left join steps s on s.k = m.k
        left join waits l on l.k = m.k
        left join outcomes o on o.k = m.k
        window w as (order by m.k)
        order by m.k
      `.execute(db),
    TRANSIENT_READ_RETRY,
  )
  const first = result.rows[0]
  if (first === undefined) throw new Error('readAttemptActivity: the window has no minute')
  return {
    now: first.now,
    minutes: result.rows.map((r) => ({
      minute: r.minute,
      terminals: r.terminals,
      queued: r.queued,
      running: r.running,
      waitP50Ms: r.wait_p50_ms,
      waitP99Ms: r.wait_p99_ms,
    })),
  }
}
