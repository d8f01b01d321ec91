// The queue floor with Baton's ledger: when the bench gives the floor's processes a database
// (`DATABASE_URL`), they make Baton's three ledger statements where Baton makes them, with the
// same @baton/store functions and the same batching, and nothing else of Baton's. The API accepts
// the delegation (one batched accept in flight, as Baton's admission) before it enqueues the job;
// the worker claims the attempt (fenced, under a lease) before the child runs and commits its
// terminal (fenced) after, each through one batched statement in flight, as Baton's worker does.
// Its queue is on Baton's own connections (auto-pipelined, lean pipelines) and its worker is
// Baton's `AttemptWorker`, so it takes jobs as Baton does; after each commit the worker rings
// Baton's settlement bell with the terminal view the commit returned, not awaited, and a waiting
// call answers from it, as Baton's do.
//
// Nothing else of Baton's: no validation beyond the floor's, no authentication, no leases kept
// alive, no steering, no metrics or logs. Baton's core, in effect: its figures beside Baton's are what everything around
// the ledger statements costs, and beside the hand-rolled service's, what the statements cost.
import { randomUUID } from 'node:crypto'
import {
  announceSettled,
  createSettlementListener,
  createSettlementPublisher,
  type StreamListener,
} from '@baton/queue'
import {
  acceptDelegations,
  claimAttempts,
  commitTerminalsReturning,
  createDb,
  createGroupBatcher,
  toAttemptView,
  type Db,
  type TerminalResultInput,
} from '@baton/store'

/** Baton's batching of the worker's claims and commits (its `LEDGER_BATCH`). */
const WORKER_BATCH = { maxBatch: 500, maxInFlight: 1 } as const
/** Baton's batching of the API's accepts (its admission). */
const ACCEPT_BATCH = { maxBatch: 256, maxInFlight: 1 } as const
/** The namespace every migrated ledger has. */
export const NAMESPACE = 'default'

/** The ledger's pool for a floor process (Baton's default pool sizes: API 20, worker 10). */
export function floorLedgerDb(databaseUrl: string, role: 'api' | 'worker'): Db {
  return createDb({
    connectionString: databaseUrl,
    maxConnections: role === 'api' ? 20 : 10,
    applicationName: `baton-bench-floor-ledger-${role}`,
  })
}

/** The API's accept: one delegation into the ledger, batched with concurrent ones. */
export function floorAccepts(
  db: Db,
): (delegation: { sessionId: string; name: string; prompt: unknown }) => Promise<string> {
  const batcher = createGroupBatcher(
    (inputs: Parameters<typeof acceptDelegations>[1][number][]) => acceptDelegations(db, inputs),
    ACCEPT_BATCH,
  )
  return async ({ sessionId, name, prompt }) => {
    const attemptId = randomUUID()
    const outcome = await batcher.submit({
      attemptId,
      newAgentId: randomUUID(),
      namespaceId: NAMESPACE,
      sessionId,
      name,
      // As Baton's API stores a text prompt.
      prompt: [
        { type: 'text', text: typeof prompt === 'string' ? prompt : JSON.stringify(prompt) },
      ],
      metadata: {},
    })
    if (outcome.kind !== 'accepted')
      throw new Error(`the ledger refused the accept: ${outcome.kind}`)
    return attemptId
  }
}

/** How a bell reaches Baton's settlement stream and what a floor process logs of a failed one. */
export interface BellSettings {
  readonly redisUrl: string
  readonly prefix: string
}
export const quietLogger = { warn: () => {} }

/** A floor worker's two ledger steps around the child. */
export interface FloorExecutions {
  /** Claims the attempt; its fence (owner generation), or an error when it is not claimable. */
  claim(attemptId: string): Promise<number>
  /** Commits the terminal under the fence and rings the bell; an error when it is refused. */
  commit(attemptId: string, ownerGeneration: number, result: TerminalResultInput): Promise<void>
  close(): Promise<void>
}

/**
 * The worker's fenced claim and fenced terminal commit, each batched with concurrent ones; a
 * commit rings the settlement bell with the attempt's terminal view, without awaiting it.
 */
export function floorExecutions(db: Db, ownerId: string, bell: BellSettings): FloorExecutions {
  const publisher = createSettlementPublisher(bell)
  const claims = createGroupBatcher(
    (attemptIds: string[]) => claimAttempts(db, { ownerId, leaseTtlMs: 30_000, attemptIds }),
    WORKER_BATCH,
  )
  const commits = createGroupBatcher(
    (inputs: Parameters<typeof commitTerminalsReturning>[1][number][]) =>
      commitTerminalsReturning(db, inputs),
    WORKER_BATCH,
  )
  return {
    async claim(attemptId: string): Promise<number> {
      const outcome = await claims.submit(attemptId)
      if (outcome.kind !== 'claimed') throw new Error(`attempt ${attemptId} was ${outcome.kind}`)
      return outcome.attempt.ownerGeneration
    },
    async commit(attemptId: string, ownerGeneration: number, result: TerminalResultInput) {
      const answer = await commits.submit({ attemptId, ownerId, ownerGeneration, result })
      if (answer.outcome !== 'committed')
        throw new Error(`attempt ${attemptId} commit: ${answer.outcome}`)
      const detail =
        answer.record === undefined
          ? undefined
          : { namespaceId: answer.record.namespaceId, view: toAttemptView(answer.record) }
      void announceSettled(publisher, attemptId, quietLogger, detail)
    },
    close: () => publisher.close(),
  }
}

/** An attempt's terminal view, as its bell carries it and a floor's wait answers it. */
export interface FloorSettlement {
  readonly attemptId: string
  readonly view: { readonly stopReason: string; readonly output: string } & Record<string, unknown>
}

/** The API's side of the bell: every settlement with a terminal view, to `onSettled`. */
export async function floorSettlements(
  bell: BellSettings,
  onSettled: (settlement: FloorSettlement) => void,
): Promise<StreamListener> {
  const listener = createSettlementListener({
    ...bell,
    onEvent: ({ attemptId, detail }) => {
      const view = detail?.view as FloorSettlement['view'] | undefined
      if (typeof view?.stopReason === 'string' && typeof view.output === 'string')
        onSettled({ attemptId, view })
    },
  })
  await listener.ready()
  return listener
}
