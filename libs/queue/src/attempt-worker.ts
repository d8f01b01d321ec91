import { Worker, type Job, type JobJson, type Span } from 'bullmq'

/**
 * BullMQ's worker, changed in two respects: when a finished job (completed or failed) asks Redis
 * for the next one, and when a job that ends the worker's wait for arrivals starts.
 *
 * The worker takes jobs two ways. Its fetch loop sends one `moveToActive` at a time until the
 * queue is empty, then blocks until a job arrives. And each finished job's `moveToFinished` may
 * also take the next waiting job in the same script (`fetchNext`), which saves a round trip per
 * job while every slot is busy and jobs wait in a backlog. With slots free, the loop is already
 * taking each arrival or waiting for the next one, so a finishing job's fetch almost always finds
 * the queue empty: half a dozen Redis reads for nothing, 0.6 per delegation under load.
 *
 * Here a finished job fetches only when the loop can't: while no `moveToActive` of the loop is in
 * flight and its last fetch did not find the queue empty: in practice, when every slot is busy.
 * A job that arrives while the loop waits sets the marker that ends the wait, and one that arrives
 * while the loop fetches is taken by its next fetch. Only jobs that arrive while every slot is
 * busy and the last fetch found the queue empty go through the marker: one round trip more.
 *
 * When the loop's wait for arrivals ends with a job, BullMQ can fetch once more before it starts
 * that job; at rest that fetch finds nothing and holds the job back a round trip. Here that one
 * fetch reports no job without asking Redis: the job starts at once, and the loop's next fetch,
 * right after, asks Redis for real. Until it has, a finished job does not ask either.
 */
export class AttemptWorker<Data = unknown, Result = unknown> extends Worker<Data, Result> {
  /** The loop's `moveToActive` calls in flight. */
  #fetching = 0
  /** The last fetch found the queue empty (BullMQ keeps the same flag privately). */
  #drained = false
  /** The loop's last fetch ended its wait with a job that has not started yet. */
  #woken = false
  /** The loop skipped a fetch for that job and has not fetched since. */
  #refetchDue = false

  protected override async moveToActive(token: string, name?: string): Promise<Job<Data, Result>> {
    if (this.#woken) {
      this.#woken = false
      this.#refetchDue = true
      // No job, as BullMQ's own fetch reports one (its type says otherwise).
      return undefined as unknown as Job<Data, Result>
    }
    // The loop fetches while drained only when its wait has just ended.
    const afterWait = this.#drained
    this.#refetchDue = false
    this.#fetching += 1
    try {
      const job = await super.moveToActive(token, name)
      this.#woken = afterWait && job !== undefined
      return job
    } finally {
      this.#fetching -= 1
    }
  }

  protected override nextJobFromJobData(
    jobData?: JobJson,
    jobId?: string,
    token?: string,
  ): Promise<Job<Data, Result>> {
    this.#drained = !jobData
    return super.nextJobFromJobData(jobData, jobId, token)
  }

  protected override handleCompleted(
    result: Result,
    job: Job<Data, Result>,
    token: string,
    fetchNextCallback: () => boolean = () => true,
    span?: Span,
  ): Promise<Job<Data, Result>> {
    return super.handleCompleted(result, job, token, this.#mayFetch(fetchNextCallback), span)
  }

  protected override handleFailed(
    error: Error,
    job: Job<Data, Result>,
    token: string,
    fetchNextCallback: () => boolean = () => true,
    span?: Span,
  ): Promise<Job<Data, Result>> {
    return super.handleFailed(error, job, token, this.#mayFetch(fetchNextCallback), span)
  }

  /** BullMQ's own condition (a free slot), and the loop neither fetching nor out of jobs. */
  #mayFetch(fetchNextCallback: () => boolean): () => boolean {
    return () => this.#fetching === 0 && !this.#refetchDue && !this.#drained && fetchNextCallback()
  }
}
