import { UnrecoverableError, type Job } from 'bullmq'
import { attemptJobSchema } from '@baton/contracts'
import type { Logger } from '@baton/observability'

/**
 * The attempt id of a job, checked before anything reaches the ledger: a job whose data is not
 * `{ attemptId: <uuid> }` can never name an attempt, so it is failed at once (no retry) with an
 * error log line, instead of poisoning the claim statement it would share or being retried.
 */
export function readAttemptJob(job: Job<unknown>, logger: Logger): string {
  const parsed = attemptJobSchema.safeParse(job.data)
  if (parsed.success) return parsed.data.attemptId
  // The issue paths only: job data is not trusted to be safe to log.
  const fields = parsed.error.issues.map((i) => i.path.join('.') || '(data)')
  logger.error({ jobId: job.id, fields }, 'malformed attempt job; failing it without retry')
  throw new UnrecoverableError('malformed attempt job: its data is not { attemptId: <uuid> }')
}
