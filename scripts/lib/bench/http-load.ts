// The one load the bench drives through HTTP, for Baton and for the hand-rolled service alike, so
// that their figures differ only by the system: the same client, concurrency, count and prompt.
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import type { BatonClient } from '@baton/client'

/** Where a system records its delegations: one row each, with a status and two timestamps. */
export interface LedgerTable {
  readonly table: 'attempts' | 'delegations'
  /** The status of a finished row, and the column that says when it finished. */
  readonly finished: 'terminal' | 'completed'
  readonly finishedAt: 'terminal_at' | 'finished_at'
}

/** A no-op run of Baton's `scripted` child; the hand-rolled worker answers the same script. */
export const NOOP_PROMPT = '{"output":"ok"}'

/** The key the bench sends the hand-rolled service, which checks none: its requests then match Baton's. */
export const UNCHECKED_KEY = `bk_${'0'.repeat(43)}`

/**
 * `count` delegations from `clients` concurrent callers, then waits until the system's table says
 * all finished. Answers delegations per second from the table's own timestamps (first row created
 * to last row finished), not from the client's clock, and how many reads of the table that took:
 * transactions of the bench's, not the system's.
 */
export async function submitAll(
  client: BatonClient,
  sizes: { readonly count: number; readonly clients: number },
  accepted: string[],
  databaseUrl: string,
  ledger: LedgerTable,
): Promise<{ perSecond: number; ledgerReads: number }> {
  let next = 0
  let rejected = 0
  await Promise.all(
    Array.from({ length: sizes.clients }, async () => {
      for (;;) {
        const i = next++
        if (i >= sizes.count) return
        try {
          const answer = await client.delegate(
            { sessionId: `bench-${i % 100}`, name: 'scripted', prompt: NOOP_PROMPT },
            { timeoutMs: 15_000 },
          )
          accepted.push(answer.attemptId)
        } catch {
          rejected += 1
        }
      }
    }),
  )
  if (rejected > 0) throw new Error(`${rejected} of ${sizes.count} delegations were refused`)
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 })
  try {
    const deadline = Date.now() + 120_000
    for (let reads = 1; ; reads += 1) {
      const r = await pool.query<{ open: number; finished: number; seconds: number }>(
        `select count(*) filter (where status <> $1)::int as open,
                count(*) filter (where status = $1)::int as finished,
                extract(epoch from max(${ledger.finishedAt}) - min(created_at))::float8 as seconds
         from ${ledger.table}`,
        [ledger.finished],
      )
      const { open = 1, finished = 0, seconds = 0 } = r.rows[0] ?? {}
      if (open === 0) {
        if (finished !== sizes.count)
          throw new Error(`${finished} of ${sizes.count} delegations finished`)
        return { perSecond: finished / seconds, ledgerReads: reads }
      }
      if (Date.now() > deadline) throw new Error(`${open} delegations still open after two minutes`)
      await sleep(100)
    }
  } finally {
    await pool.end()
  }
}

/** `count` submit-and-wait calls, one after another: the latency of each in ms, ascending. */
export async function sequentialWaits(
  client: BatonClient,
  count: number,
  accepted: string[],
): Promise<number[]> {
  const latencies: number[] = []
  for (let i = 0; i < count; i += 1) {
    const sent = performance.now()
    const view = await client.delegateAndWait(
      { sessionId: 'bench-seq', name: 'scripted', prompt: NOOP_PROMPT },
      10_000,
      { timeoutMs: 15_000 },
    )
    latencies.push(performance.now() - sent)
    accepted.push(view.attemptId)
    if (view.status !== 'terminal') throw new Error(`a submit-and-wait answered ${view.status}`)
  }
  return latencies.sort((a, b) => a - b)
}
