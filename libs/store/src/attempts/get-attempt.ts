import type { FailureCategory } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import type { AttemptRow, ContinuationRow } from '../schema.ts'

/** One attempt as the ledger holds it (no lease fields); the public view is the API's to shape. */
export interface AttemptRecord {
  readonly id: string
  readonly agentId: string
  readonly sessionId: string
  readonly name: string
  readonly status: AttemptRow['status']
  readonly createdAt: Date
  readonly startedAt: Date | null
  readonly cancelRequestedAt: Date | null
  readonly stopReason: string | null
  /** The bounded inline preview of the output (the full output is in the artifact, if any). */
  readonly output: string | null
  readonly outputTruncated: boolean | null
  readonly outputBytes: number | null
  readonly outputDigest: string | null
  readonly failureCategory: FailureCategory | null
  readonly terminalAt: Date | null
  /** The agent-history span the terminal commit appended, if any. */
  readonly context: { readonly baseSeq: number; readonly eventCount: number } | null
  /** The delivery of a result to its parent run; null without a parent run or before terminal. */
  readonly delivery: AttemptDelivery | null
}

export interface AttemptDelivery {
  readonly state: ContinuationRow['state']
  readonly inputDigest: string
  readonly consumerRunId: string | null
  readonly suppressionReason: ContinuationRow['suppression_reason']
  readonly suppressionRunId: string | null
}

type DeliveryColumns = {
  readonly delivery_state: ContinuationRow['state'] | null
  readonly delivery_digest: string | null
  readonly delivery_consumer: string | null
  readonly delivery_suppression: ContinuationRow['suppression_reason']
  readonly delivery_suppression_run: string | null
}

/** Reads one attempt, or `undefined`. */
export async function getAttempt(db: Db, attemptId: string): Promise<AttemptRecord | undefined> {
  const row = await retryTransient(
    () =>
      db
        .selectFrom('attempts as a')
        .leftJoin('continuations as c', 'c.attempt_id', 'a.id')
        .selectAll('a')
        .select([
          'c.state as delivery_state',
          'c.input_digest as delivery_digest',
          'c.consumer_run_id as delivery_consumer',
          'c.suppression_reason as delivery_suppression',
          'c.suppression_run_id as delivery_suppression_run',
        ])
        .where('a.id', '=', attemptId)
        .executeTakeFirst(),
    TRANSIENT_READ_RETRY,
  )
  return row === undefined ? undefined : toAttemptRecord(row)
}

function toAttemptRecord(row: AttemptRow & DeliveryColumns): AttemptRecord {
  return {
    id: row.id,
    agentId: row.agent_id,
    sessionId: row.session_id,
    name: row.name,
    status: row.status,
    createdAt: row.created_at,
    startedAt: row.started_at,
    cancelRequestedAt: row.cancel_requested_at,
    stopReason: row.stop_reason,
    output: row.output_preview,
    outputTruncated: row.output_truncated,
    outputBytes: row.output_bytes,
    outputDigest: row.output_digest,
    failureCategory: row.failure_category,
    terminalAt: row.terminal_at,
    context:
      row.context_base === null || row.context_event_count === null
        ? null
        : { baseSeq: row.context_base, eventCount: row.context_event_count },
    delivery:
      row.delivery_state === null || row.delivery_digest === null
        ? null
        : {
            state: row.delivery_state,
            inputDigest: row.delivery_digest,
            consumerRunId: row.delivery_consumer,
            suppressionReason: row.delivery_suppression,
            suppressionRunId: row.delivery_suppression_run,
          },
  }
}
