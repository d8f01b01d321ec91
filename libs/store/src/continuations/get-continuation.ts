import type { Db } from '../db.ts'
import type { ContinuationRow, DeliveryState, SuppressionReason } from '../schema.ts'

/** The delivery of one attempt's result to its parent, and the receipt of its admission. */
export interface ContinuationRecord {
  readonly attemptId: string
  readonly sessionId: string
  readonly parentRunId: string
  readonly state: DeliveryState
  /** The run that consumes (or consumed) the result: the held-for parent, or a continuation run. */
  readonly consumerRunId: string | null
  readonly suppressionReason: SuppressionReason | null
  readonly suppressionRunId: string | null
  /** The canonical durable input (RFC 8785 JSON text) and its digest. */
  readonly input: string
  readonly inputDigest: string
  /** The admission receipt (RFC 8785 JSON text), identical for every admission of the attempt. */
  readonly receipt: string
  readonly admittedAt: Date
  readonly deliveredAt: Date | null
}

/** The continuation of an attempt, or of the continuation run that carries it; or `undefined`. */
export async function getContinuation(
  db: Db,
  namespaceId: string,
  by: { readonly attemptId: string } | { readonly runId: string },
): Promise<ContinuationRecord | undefined> {
  const query = db.selectFrom('continuations').selectAll().where('namespace_id', '=', namespaceId)
  const row = await (
    'attemptId' in by
      ? query.where('attempt_id', '=', by.attemptId)
      : query.where('attempt_id', '=', (eb) =>
          eb.selectFrom('runs').select('cause_attempt_id').where('id', '=', by.runId),
        )
  ).executeTakeFirst()
  return row === undefined ? undefined : toContinuationRecord(row)
}

function toContinuationRecord(row: ContinuationRow): ContinuationRecord {
  return {
    attemptId: row.attempt_id,
    sessionId: row.session_id,
    parentRunId: row.parent_run_id,
    state: row.state,
    consumerRunId: row.consumer_run_id,
    suppressionReason: row.suppression_reason,
    suppressionRunId: row.suppression_run_id,
    input: row.input,
    inputDigest: row.input_digest,
    receipt: row.receipt,
    admittedAt: row.admitted_at,
    deliveredAt: row.delivered_at,
  }
}
