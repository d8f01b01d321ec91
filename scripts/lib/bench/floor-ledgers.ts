// Which ledger a floor process writes, from its environment: none without `DATABASE_URL`; with
// it, Baton's own statements (Baton's core, floor-with-ledger.ts), with `FLOOR_LEDGER=bare` the
// least three writes that keep Baton's durable steps (floor-bare-ledger.ts), or with
// `FLOOR_LEDGER=required` those writes with the records Baton's design requires
// (floor-required-ledger.ts).
import { randomUUID } from 'node:crypto'
import { plainLedgerPool, plainAccepts, plainExecutions } from './floor-bare-ledger.ts'
import { PLAIN_LEDGERS } from './floor-required-ledger.ts'
import {
  floorAccepts,
  floorExecutions,
  floorLedgerDb,
  type BellSettings,
  type FloorExecutions,
} from './floor-with-ledger.ts'

export const FLOOR_LEDGERS = ['baton', 'bare', 'required'] as const
export type FloorLedgerKind = (typeof FLOOR_LEDGERS)[number]

function ledgerKind(env: NodeJS.ProcessEnv): FloorLedgerKind {
  const kind = env.FLOOR_LEDGER ?? 'baton'
  if (!(FLOOR_LEDGERS as readonly string[]).includes(kind))
    throw new Error(`FLOOR_LEDGER must be one of ${FLOOR_LEDGERS.join(', ')}, got ${kind}`)
  return kind as FloorLedgerKind
}

export interface FloorApiLedger {
  readonly accept: (delegation: {
    sessionId: string
    name: string
    prompt: unknown
  }) => Promise<string>
  readonly close: () => Promise<void>
}

/** The API's ledger, or `undefined` for the floor without one. */
export function floorApiLedger(env: NodeJS.ProcessEnv): FloorApiLedger | undefined {
  const url = env.DATABASE_URL
  if (url === undefined) return undefined
  const kind = ledgerKind(env)
  if (kind !== 'baton') {
    const pool = plainLedgerPool(url, 'api', kind)
    return { accept: plainAccepts(pool, PLAIN_LEDGERS[kind]), close: () => pool.end() }
  }
  const db = floorLedgerDb(url, 'api')
  return { accept: floorAccepts(db), close: () => db.destroy() }
}

/** The worker's ledger steps, or `undefined` for the floor without one. */
export function floorWorkerLedger(
  env: NodeJS.ProcessEnv,
  bell: BellSettings,
): FloorExecutions | undefined {
  const url = env.DATABASE_URL
  if (url === undefined) return undefined
  const ownerId = randomUUID()
  const kind = ledgerKind(env)
  if (kind !== 'baton') {
    const pool = plainLedgerPool(url, 'worker', kind)
    const steps = plainExecutions(pool, ownerId, bell, PLAIN_LEDGERS[kind])
    return { ...steps, close: () => steps.close().then(() => pool.end()) }
  }
  const db = floorLedgerDb(url, 'worker')
  const steps = floorExecutions(db, ownerId, bell)
  return { ...steps, close: () => steps.close().then(() => db.destroy()) }
}
