import { promptToBlocks, type Prompt } from '@baton/contracts'
import type { Logger } from '@baton/observability'
import { findUndeliveredSteering, markSteeringDelivered, type Db } from '@baton/store'
import type { SubagentRun } from '@baton/subagents'
import type { OwnedExecution } from '../lease/lease-keeper.ts'

export interface SteeringDelivery {
  /**
   * This worker is about to claim the attempt: a bell for it (a steer event, a heartbeat) that
   * rings before its run is attached is remembered, so that `attach` reads the ledger then.
   * Returns the release of this expectation (the same attempt may be expected by two jobs at once:
   * a redelivered job whose claim answers `held`).
   */
  expect(attemptId: string): () => void
  /**
   * The run of an owned execution is ready: deliver anything already waiting. `steeringPending`
   * is the claim's answer; when it says nothing waited and no bell rang since `expect`, the ledger
   * is not read (absent: it is read).
   */
  attach(execution: OwnedExecution, run: SubagentRun, steeringPending?: boolean): void
  /**
   * The run has returned: nothing more is handed to it, and this resolves once the delivery marks
   * of what it was handed are written, so that the terminal commit, which ends the owner's right
   * to mark, comes after them and the view counts every message the child had. It rejects when a
   * mark failed (the caller tries again: a mark is retry-safe), and answers `refused` when the
   * ledger fenced the marks out (the owner lost the attempt: the commit's own fence will say so).
   */
  finish(attemptId: string): Promise<'marked' | 'refused'>
  detach(attemptId: string): void
  /** New messages may wait in the ledger (a steer event, or a heartbeat saw some). */
  deliver(attemptId: string): Promise<void>
  /**
   * Resolves once every delivery started so far has settled: callers start them without waiting
   * (`void deliver(…)`), so shutdown drains them here before it closes the database pool.
   */
  drain(): Promise<void>
}

interface Attached {
  readonly execution: OwnedExecution
  readonly run: SubagentRun
  /** The ledger fenced this owner's marks out. */
  refused: boolean
  /** Highest sequence handed to the run: each message reaches it once, in order. */
  lastSequence: number
  /** Highest sequence whose delivery mark was written: a failed mark is tried again. */
  markedThrough: number
  /** The run has returned: no message is handed to it any more. */
  finished: boolean
  /** Deliveries of one attempt run one after another. */
  chain: Promise<void>
}

/**
 * Hands steering messages recorded in the ledger to the owning worker's run (`sendMessage`),
 * each once and in sequence order, then marks them delivered (fenced by ownership). A run whose
 * provider cannot steer keeps its messages undelivered and says so in the log.
 */
export function createSteeringDelivery(deps: {
  db: Db
  ownerId: string
  logger: Logger
}): SteeringDelivery {
  const attached = new Map<string, Attached>()
  /** Attempts being claimed: whether a bell rang for them meanwhile, and by how many jobs. */
  const expected = new Map<string, { rung: boolean; holders: number }>()
  const inFlight = new Set<Promise<void>>()

  async function deliverNow(state: Attached): Promise<void> {
    // An aborted run is handed nothing more; what it already had is still marked (fenced).
    if (!state.finished && !state.execution.signal.aborted) await handOver(state)
    if (state.lastSequence > state.markedThrough && !state.refused) await mark(state)
  }

  /** Hands the run the messages recorded after the last one it got. */
  async function handOver(state: Attached): Promise<void> {
    const { attemptId } = state.execution
    const messages = await findUndeliveredSteering(deps.db, {
      attemptId,
      afterSequence: state.lastSequence,
    })
    // The run may have returned while the ledger answered: those messages never reach it.
    if (messages.length === 0 || state.finished) return
    const send = state.run.sendMessage?.bind(state.run)
    if (send === undefined) {
      deps.logger.warn(
        { attemptId, waiting: messages.length },
        'run cannot be steered; messages stay undelivered',
      )
      return
    }
    for (const message of messages) {
      send(promptToBlocks(message.content as Prompt))
      state.lastSequence = message.sequence
    }
  }

  async function mark(state: Attached): Promise<void> {
    const { attemptId, ownerGeneration } = state.execution
    const through = state.lastSequence
    const marked = await markSteeringDelivered(deps.db, {
      attemptId,
      ownerId: deps.ownerId,
      ownerGeneration,
      throughSequence: through,
    })
    // Nothing marked: already marked (a retry after a lost answer), or fenced out.
    if (marked === 0) {
      const left = await findUndeliveredSteering(deps.db, {
        attemptId,
        afterSequence: state.markedThrough,
      })
      if (left.some((m) => m.sequence <= through)) {
        state.refused = true
        deps.logger.warn({ attemptId, through }, 'steering marks refused by the ledger')
        return
      }
    }
    state.markedThrough = through
    deps.logger.debug({ attemptId, through }, 'steering delivered')
  }

  function deliver(attemptId: string): Promise<void> {
    const state = attached.get(attemptId)
    if (state === undefined) {
      const claiming = expected.get(attemptId)
      if (claiming !== undefined) claiming.rung = true
      return Promise.resolve()
    }
    const chain = state.chain
      .then(() => deliverNow(state))
      .catch((error: unknown) =>
        deps.logger.warn({ err: error, attemptId }, 'steering delivery failed; will retry'),
      )
    state.chain = chain
    inFlight.add(chain)
    void chain.finally(() => inFlight.delete(chain))
    return chain
  }

  return {
    expect(attemptId) {
      const entry = expected.get(attemptId) ?? { rung: false, holders: 0 }
      entry.holders += 1
      expected.set(attemptId, entry)
      let released = false
      return () => {
        if (released) return
        released = true
        entry.holders -= 1
        if (entry.holders === 0 && expected.get(attemptId) === entry) expected.delete(attemptId)
      }
    },
    attach(execution, run, steeringPending = true) {
      const { attemptId } = execution
      const rung = expected.get(attemptId)?.rung === true
      attached.set(attemptId, {
        execution,
        run,
        refused: false,
        lastSequence: 0,
        markedThrough: 0,
        finished: false,
        chain: Promise.resolve(),
      })
      // Every message is recorded before its bell rings: one recorded before the claim is in the
      // claim's answer, one recorded after it rings a bell that `expect` kept. Neither: no read.
      if (steeringPending || rung) void deliver(attemptId)
    },
    async finish(attemptId) {
      const state = attached.get(attemptId)
      if (state === undefined) return 'marked'
      state.finished = true
      // Settles the deliveries under way (whose failures they log), then marks what is left,
      // its failure thrown to the caller.
      await deliver(attemptId)
      const chain = state.chain.then(async () => {
        if (state.lastSequence > state.markedThrough && !state.refused) await mark(state)
      })
      state.chain = chain.catch(() => undefined)
      await chain
      return state.refused ? 'refused' : 'marked'
    },
    detach(attemptId) {
      attached.delete(attemptId)
    },
    deliver,
    async drain() {
      // A delivery may start another (attach → deliver), so drain until none is left.
      while (inFlight.size > 0) await Promise.all(inFlight)
    },
  }
}
