// History for the growth bench, written straight into the ledger with SQL (not through the API):
// terminal attempts as a worker leaves them, each with its agent, its three transitions (accepted,
// claimed, terminal) and one event of agent history, a second apart from an hour ago back (or from
// further back: the expired history of the retention dimension). One home for the generated rows:
// a change of the ledger's keys changes this file alone.
import type pg from 'pg'

/**
 * Rows per statement: one set-based `insert … select generate_series` per table and chunk, each
 * its own transaction, so a long history never holds one open for long.
 */
const CHUNK = 1_000_000
/** The newest generated attempt ended this long ago; each next one a second earlier, … */
export const HISTORY_NEWEST_S = 3600
/**
 * … wrapping around after this many (29 days): the oldest ended 29 days and an hour ago, inside the
 * default ledger retention (30 days), so the history levels measure a ledger retention leaves be.
 */
export const HISTORY_SPREAD_S = 29 * 86_400
/** Attempts per generated session. */
const PER_SESSION = 1000

/**
 * The id of generated row `i` of one kind: ascending with `i`, so each chunk appends to the end of
 * its primary key's index instead of touching a random page of it per row (what random ids cost a
 * 10-million-row index on a small buffer pool). The kind is the id's first group.
 */
const id = (kind: number, i: string) =>
  `('${kind.toString(16).padStart(8, '0')}-0000-4000-8000-' || lpad(to_hex(${i}), 12, '0'))::uuid`
const AGENT = (i: string) => id(1, i)
const ATTEMPT = (i: string) => id(2, i)
/** When generated attempt `i` ended: the newest `$3` seconds ago. */
const ENDED = (i: string) =>
  `(now() - $3::int * interval '1 second' - (${i} % ${HISTORY_SPREAD_S}) * interval '1 second')`

/**
 * The statements that write attempts `$1` … `$2` with what the ledger keeps beside each; those
 * that date them take the newest one's age in seconds as `$3`.
 */
const STATEMENTS = [
  `insert into sessions (namespace_id, id)
   select 'default', 'history-' || s
   from generate_series($1::int / ${PER_SESSION}, $2::int / ${PER_SESSION}) s
   on conflict do nothing`,
  `insert into agents (id, namespace_id, session_id, name)
   select ${AGENT('i')}, 'default', 'history-' || (i / ${PER_SESSION}), 'scripted'
   from generate_series($1::int, $2::int) i`,
  `insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status,
                         stop_reason, output_preview, output_truncated, output_bytes,
                         output_digest, fingerprint, owner_id, owner_generation,
                         created_at, started_at, terminal_at, heartbeat_at,
                         context_base, context_event_count, context_digest)
   select ${ATTEMPT('i')}, 'default', ${AGENT('i')},
          'history-' || (i / ${PER_SESSION}), 'scripted', '[{"type":"text","text":"p"}]',
          'terminal', 'completed', 'ok', false, 2, 'digest', 'fingerprint', 'history', 1,
          t - interval '2 seconds', t - interval '1 second', t, t - interval '1 second',
          0, 1, 'digest'
   from (select i, ${ENDED('i')} as t from generate_series($1::int, $2::int) i) g`,
  `insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event,
                                    owner_id, owner_generation, at)
   select ${ATTEMPT('i')}, 'history-' || (i / ${PER_SESSION}), s.from_status, s.to_status, s.event, s.owner_id, s.generation,
          ${ENDED('i')} - s.before * interval '1 second'
   from generate_series($1::int, $2::int) i,
        (values (null, 'accepted', 'accepted', null, 0, 2),
                ('accepted', 'running', 'claimed', 'history', 1, 1),
                ('running', 'terminal', 'committed', 'history', 1, 0))
          as s(from_status, to_status, event, owner_id, generation, before)`,
  `insert into agent_context_events (agent_id, session_id, seq, attempt_id, event)
   select ${AGENT('i')}, 'history-' || (i / ${PER_SESSION}), 0, ${ATTEMPT('i')},
          '{"role":"assistant","content":[{"type":"text","text":"ok"}]}'
   from generate_series($1::int, $2::int) i`,
]

/**
 * Adds terminal attempts `from` … `to - 1` (by number) to the ledger, the newest of them ended
 * `newestS` seconds ago, analyzing it after each chunk and checkpointing at the end. Generated rows are told apart by their owner, `history`.
 * The schema is the ledger's own, every index and constraint in place; on the one connection that writes:
 * - `synchronous_commit = off`: a chunk's commit does not wait for its WAL to reach the disk (a
 *   crash would lose the last chunks of a bench's throwaway database, nothing else);
 * - `session_replication_role = replica`: foreign keys are not checked row by row and row
 *   triggers do not fire. The rows are written parent first, so every key they name exists; the
 *   triggers write session events for hosted sessions only, and no generated session is one.
 */
export async function growHistory(
  pool: pg.Pool,
  from: number,
  to: number,
  log: (line: string) => void,
  newestS: number = HISTORY_NEWEST_S,
): Promise<void> {
  if (to <= from) return
  const client = await pool.connect()
  try {
    await client.query(`set synchronous_commit = off`)
    await client.query(`set session_replication_role = replica`)
    for (let start = from; start < to; start += CHUNK) {
      const end = Math.min(to, start + CHUNK) - 1
      const started = performance.now()
      for (const statement of STATEMENTS)
        await client.query(
          statement,
          statement.includes('$3') ? [start, end, newestS] : [start, end],
        )
      // Analyzed as it grows, as autovacuum would: a planner that still thought the tables small
      // would scan them whole from the reconcilers' statements while the history is written.
      await client.query('analyze')
      const s = (performance.now() - started) / 1000
      log(`bench: history ${end + 1} of ${to} terminal attempts written (chunk ${s.toFixed(0)} s)`)
    }
    // Written in minutes, not the months a ledger takes to grow: what the write left dirty is
    // flushed now, so that the checkpoint it would start does not land in what is measured next.
    await client.query('checkpoint')
  } finally {
    // Closed, not returned to the pool: its settings are the generator's alone.
    client.release(true)
  }
}
