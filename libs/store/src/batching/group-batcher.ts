/**
 * Group batching for hot statements (the group-commit pattern). Items submitted while fewer than
 * `maxInFlight` batches run are sent at the end of the current tick; items submitted while the
 * limit is reached wait and leave together in the next batch. At low load a lone item goes out
 * at once (no added latency); under load one statement carries many items, so round trips,
 * backend wake-ups and commits grow far slower than the request rate.
 */
export interface GroupBatcher<I, O> {
  submit(item: I): Promise<O>
  /** Items waiting plus items in running batches. */
  readonly pending: number
}

export interface GroupBatcherOptions {
  /** Most items in one batch. */
  readonly maxBatch: number
  /** Batches allowed to run at once (each uses one pooled connection). */
  readonly maxInFlight: number
  /**
   * A batch of several items that failed with an error this accepts is run again one item at a
   * time, so only the items that fail on their own get an error and the others their result (one
   * bad item must not fail its neighbours). Absent: the whole batch gets the error.
   */
  readonly isolate?: (error: unknown) => boolean
}

/**
 * `run` receives the items of one batch and returns one result per item, in order. If it throws,
 * every item of that batch is rejected with the same error (the caller's retry rules apply),
 * unless `isolate` accepts the error.
 */
export function createGroupBatcher<I, O>(
  run: (items: I[]) => Promise<O[]>,
  options: GroupBatcherOptions,
): GroupBatcher<I, O> {
  interface Waiting {
    item: I
    resolve: (value: O) => void
    reject: (error: unknown) => void
  }
  let queue: Waiting[] = []
  let inFlight = 0
  let inFlightItems = 0
  let scheduled = false

  function schedule(): void {
    if (scheduled) return
    scheduled = true
    queueMicrotask(flush)
  }

  function flush(): void {
    scheduled = false
    while (queue.length > 0 && inFlight < options.maxInFlight) {
      const batch = queue.slice(0, options.maxBatch)
      queue = queue.slice(batch.length)
      inFlight += 1
      inFlightItems += batch.length
      void runBatch(batch)
    }
  }

  async function runItems(batch: Waiting[]): Promise<void> {
    const results = await run(batch.map((w) => w.item))
    if (results.length !== batch.length) {
      throw new Error(`batch returned ${results.length} results for ${batch.length} items`)
    }
    batch.forEach((w, i) => w.resolve(results[i] as O))
  }

  async function runBatch(batch: Waiting[]): Promise<void> {
    try {
      await runItems(batch)
    } catch (error) {
      if (batch.length > 1 && options.isolate?.(error) === true) {
        // One after another: the batch holds one in-flight slot, so one connection.
        for (const w of batch) await runItems([w]).catch(w.reject)
      } else {
        for (const w of batch) w.reject(error)
      }
    } finally {
      inFlight -= 1
      inFlightItems -= batch.length
      if (queue.length > 0) schedule()
    }
  }

  return {
    get pending() {
      return queue.length + inFlightItems
    },
    submit(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject })
        schedule()
      })
    },
  }
}
