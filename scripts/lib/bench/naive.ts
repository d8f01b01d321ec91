// Starts the hand-rolled service as the bench runs Baton: one API process and `workers` worker
// processes, on their own database and queue prefix, through the same launcher.
import type pg from 'pg'
import type { AppProcess } from '@baton/testing/processes'
import { createDatabaseWithSchema } from '../services.ts'
import { startApiAndWorkers } from './service-processes.ts'
import { tableLedgerReader, type LedgerReader } from './http-load.ts'
import type { LedgerTimes } from './wait-steps.ts'
import {
  NAIVE_API_READY_MESSAGE,
  NAIVE_SCHEMA_SQL,
  NAIVE_WORKER_READY_MESSAGE,
} from './naive-ledger.ts'

/** Drops and recreates the service's database with its one table. */
export function prepareNaiveDatabase(url: string): Promise<void> {
  return createDatabaseWithSchema(url, NAIVE_SCHEMA_SQL)
}

export function startNaiveService(
  env: Record<string, string>,
  workers: number,
): Promise<AppProcess[]> {
  return startApiAndWorkers(
    {
      name: 'naive',
      api: { entry: 'scripts/lib/bench/naive-service.ts', readyMessage: NAIVE_API_READY_MESSAGE },
      worker: {
        entry: 'scripts/lib/bench/naive-worker.ts',
        readyMessage: NAIVE_WORKER_READY_MESSAGE,
      },
    },
    env,
    workers,
  )
}

/** The bench's reads of the `delegations` table. */
export function naiveLedger(pool: pg.Pool): LedgerReader {
  return tableLedgerReader(pool, 'delegations', 'completed')
}

/** When the insert and the worker's update of each finished row began, epoch ms. */
export async function naiveLedgerTimes(
  pool: pg.Pool,
  ids: readonly string[],
): Promise<Map<string, LedgerTimes>> {
  if (ids.length === 0) return new Map()
  const r = await pool.query<{ id: string; accepted: number; committed: number }>(
    `select id,
            extract(epoch from created_at)::float8 * 1000 as accepted,
            extract(epoch from finished_at)::float8 * 1000 as committed
     from delegations where id = any($1::uuid[]) and finished_at is not null`,
    [ids],
  )
  return new Map(
    r.rows.map((row) => [row.id, { acceptedAtMs: row.accepted, committedAtMs: row.committed }]),
  )
}
