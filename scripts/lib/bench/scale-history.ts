// History for the growth bench, written straight into the ledger with SQL (not through the API):
// terminal attempts as a worker leaves them, each with its agent, its three transitions (accepted,
// claimed, terminal) and one event of agent history, a second apart from an hour ago back.
import type pg from 'pg'

/** Rows per statement: each is one transaction, so a long history never holds one open for long. */
const CHUNK = 250_000
/** The newest generated attempt ended this long ago; each next one a second earlier, … */
export const HISTORY_NEWEST_S = 3600
/** … wrapping around after this many (thirty days). */
export const HISTORY_SPREAD_S = 2_592_000
/** Attempts per generated session. */
const PER_SESSION = 1000

/** Adds terminal attempts `from` … `to - 1` (by number) to the ledger, then analyzes it. */
export async function growHistory(
  pool: pg.Pool,
  from: number,
  to: number,
  log: (line: string) => void,
): Promise<void> {
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK) - 1
    const range = [start, end]
    await pool.query(
      `insert into sessions (namespace_id, id)
       select 'default', 'history-' || s from generate_series($1::int / ${PER_SESSION}, $2::int / ${PER_SESSION}) s
       on conflict do nothing`,
      range,
    )
    await pool.query(
      `insert into agents (id, namespace_id, session_id, name)
       select md5('agent-' || i)::uuid, 'default', 'history-' || (i / ${PER_SESSION}), 'scripted'
       from generate_series($1::int, $2::int) i`,
      range,
    )
    await pool.query(
      `insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status,
                             stop_reason, output_preview, output_truncated, output_bytes,
                             output_digest, fingerprint, owner_id, owner_generation,
                             created_at, started_at, terminal_at, heartbeat_at,
                             context_base, context_event_count, context_digest)
       select md5('attempt-' || i)::uuid, 'default', md5('agent-' || i)::uuid,
              'history-' || (i / ${PER_SESSION}), 'scripted', '[{"type":"text","text":"p"}]',
              'terminal', 'completed', 'ok', false, 2, 'digest', 'fingerprint', 'history', 1,
              t - interval '2 seconds', t - interval '1 second', t, t - interval '1 second',
              0, 1, 'digest'
       from (select i, now() - interval '${HISTORY_NEWEST_S} seconds'
                       - (i % ${HISTORY_SPREAD_S}) * interval '1 second' as t
             from generate_series($1::int, $2::int) i) g`,
      range,
    )
    await pool.query(
      `insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id,
                                        owner_generation, at)
       select md5('attempt-' || i)::uuid, s.from_status, s.to_status, s.event, s.owner_id,
              s.generation, now() - interval '${HISTORY_NEWEST_S} seconds'
                            - (i % ${HISTORY_SPREAD_S}) * interval '1 second'
       from generate_series($1::int, $2::int) i,
            (values (null, 'accepted', 'accepted', null, 0),
                    ('accepted', 'running', 'claimed', 'history', 1),
                    ('running', 'terminal', 'committed', 'history', 1))
              as s(from_status, to_status, event, owner_id, generation)`,
      range,
    )
    await pool.query(
      `insert into agent_context_events (agent_id, seq, attempt_id, event)
       select md5('agent-' || i)::uuid, 0, md5('attempt-' || i)::uuid,
              '{"role":"assistant","content":[{"type":"text","text":"ok"}]}'
       from generate_series($1::int, $2::int) i`,
      range,
    )
    log(`bench: history ${end + 1} of ${to} terminal attempts written`)
  }
  await pool.query('analyze')
}
