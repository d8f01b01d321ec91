// The one load that the bench drives through HTTP, for Baton and for the hand-rolled service
// alike, so that their figures differ only by the system: the same client, the same concurrency,
// the same count, the same prompt.
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import type { BatonClient } from '@baton/client'
import { wallClockMs, type TimedCall } from './wait-steps.ts'

export interface LoadSizes {
  readonly count: number
  readonly clients: number
  readonly sequential: number
  /** Every delegation carries its own `Idempotency-Key`. */
  readonly keyed: boolean
}

/** How the bench reads a system's own table; `queries` counts the transactions it ran there. */
export interface LedgerReader {
  /** Delegations not yet finished. */
  openCount(): Promise<number>
  /** Seconds from the first row created to the last row finished, and how many rows finished. */
  span(): Promise<{ seconds: number; n: number }>
  readonly queries: number
}

/** Counts the reads of `reads`: each is one transaction the bench runs in the system's database. */
export function countedLedger(reads: Omit<LedgerReader, 'queries'>): LedgerReader {
  let queries = 0
  return {
    get queries() {
      return queries
    },
    openCount() {
      queries += 1
      return reads.openCount()
    },
    span() {
      queries += 1
      return reads.span()
    },
  }
}

/**
 * The reads of a system whose one table has a row per delegation with `status`, `created_at` and
 * `finished_at` (the hand-rolled service, the plain ledgers): open rows are those not yet in
 * `finished` status, and the span runs from the first row created to the last one finished.
 */
export function tableLedgerReader(
  pool: pg.Pool,
  table: 'delegations' | 'attempts',
  finished: 'completed' | 'terminal',
): LedgerReader {
  return countedLedger({
    async openCount() {
      const r = await pool.query<{ open: number }>(
        `select count(*)::int as open from ${table} where status <> $1`,
        [finished],
      )
      return r.rows[0]?.open ?? 0
    },
    async span() {
      const r = await pool.query<{ seconds: number; n: number }>(
        `select extract(epoch from max(finished_at) - min(created_at))::float8 as seconds,
                count(*)::int as n
         from ${table} where status = $1`,
        [finished],
      )
      return { seconds: r.rows[0]?.seconds ?? 0, n: r.rows[0]?.n ?? 0 }
    },
  })
}

/** A no-op run of Baton's `scripted` child; the hand-rolled worker answers the same script. */
export const NOOP_PROMPT = '{"output":"ok"}'

/**
 * The key the bench sends the hand-rolled service and the queue floors, which check none: their
 * requests then match Baton's.
 */
export const UNCHECKED_KEY = `bk_${'0'.repeat(43)}`

/**
 * `count` delegations from `clients` concurrent callers, then waits until the ledger says all
 * finished. Throughput comes from the ledger's own timestamps, not from the client's clock.
 */
export async function submitAll(
  client: BatonClient,
  sizes: LoadSizes,
  accepted: string[],
  ledger: LedgerReader,
): Promise<{ rejected: number }> {
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
            { timeoutMs: 15_000, ...(sizes.keyed ? { idempotencyKey: `bench-${i}` } : {}) },
          )
          accepted.push(answer.attemptId)
        } catch {
          rejected += 1
        }
      }
    }),
  )
  const deadline = Date.now() + 120_000
  while ((await ledger.openCount()) > 0 && Date.now() < deadline) await sleep(100)
  return { rejected }
}

export async function perSecond(ledger: LedgerReader): Promise<number> {
  const span = await ledger.span()
  return span.seconds > 0 ? span.n / span.seconds : 0
}

/**
 * `sequential` submit-and-wait calls, one after another: the latency of each, in ms, and when each
 * answered call was sent and answered (for the step accounting of `wait-steps.ts`).
 */
export async function sequentialWaits(
  client: BatonClient,
  sizes: LoadSizes,
  accepted: string[],
): Promise<{ latencies: number[]; calls: TimedCall[]; rejected: number }> {
  const latencies: number[] = []
  const calls: TimedCall[] = []
  let rejected = 0
  for (let i = 0; i < sizes.sequential; i += 1) {
    const sentAtMs = wallClockMs()
    try {
      const view = await client.delegateAndWait(
        { sessionId: 'bench-seq', name: 'scripted', prompt: NOOP_PROMPT },
        10_000,
        { timeoutMs: 15_000 },
      )
      calls.push({ attemptId: view.attemptId, sentAtMs, answeredAtMs: wallClockMs() })
      accepted.push(view.attemptId)
    } catch {
      rejected += 1
    }
    latencies.push(wallClockMs() - sentAtMs)
  }
  return { latencies: latencies.sort((a, b) => a - b), calls, rejected }
}
