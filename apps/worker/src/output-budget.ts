import type { OutputBudget } from '@baton/subagents'

/**
 * One attempt's share of the worker's output memory budget: what its child reserved while it
 * produced its output, topped up to the output's size when the child returned it, and given back
 * once the attempt's terminal commit is over (`release`).
 */
export interface OutputHold extends OutputBudget {
  /** Bytes this attempt holds. */
  readonly heldBytes: number
  /** Holds at least `bytes` in all, reserving the shortfall; false, changing nothing, when it does not fit. */
  holdAtLeast(bytes: number): boolean
  /** Gives everything back and refuses any later reservation. Idempotent. */
  release(): void
}

/**
 * The worker's output memory budget (`OUTPUT_MEMORY_BUDGET_BYTES`): the child output, in UTF-8
 * bytes, that all its attempts may hold at once. A reservation never waits: an output that does
 * not fit now is refused, and its attempt ends `error` / `output_budget_exceeded`, so many large
 * outputs at once cost their attempts, never the process.
 */
export interface WorkerOutputBudget {
  readonly limitBytes: number
  /** Bytes held by all attempts now. */
  readonly heldBytes: number
  /** A hold for one attempt, holding nothing yet. */
  open(): OutputHold
}

/**
 * One attempt's hold. A class, so that its getter lives on one prototype: an object literal with a
 * getter gets a hidden class of its own per object, which keeps it alive through every
 * young-generation collection.
 */
class AttemptHold implements OutputHold {
  #held = 0
  #released = false
  readonly #take: (bytes: number) => boolean
  readonly #give: (bytes: number) => void

  constructor(take: (bytes: number) => boolean, give: (bytes: number) => void) {
    this.#take = take
    this.#give = give
  }

  get heldBytes(): number {
    return this.#held
  }

  reserve(bytes: number): boolean {
    // A child still running after its attempt ended (it ignored its abort) gets nothing more.
    if (this.#released || !this.#take(bytes)) return false
    this.#held += bytes
    return true
  }

  holdAtLeast(bytes: number): boolean {
    return bytes <= this.#held || this.reserve(bytes - this.#held)
  }

  release(): void {
    this.#released = true
    this.#give(this.#held)
    this.#held = 0
  }
}

export function createOutputBudget(limitBytes: number): WorkerOutputBudget {
  let heldBytes = 0

  function take(bytes: number): boolean {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`bad output size ${bytes}`)
    if (heldBytes + bytes > limitBytes) return false
    heldBytes += bytes
    return true
  }
  const give = (bytes: number): void => {
    heldBytes -= bytes
  }

  return {
    limitBytes,
    get heldBytes() {
      return heldBytes
    },
    open: () => new AttemptHold(take, give),
  }
}
