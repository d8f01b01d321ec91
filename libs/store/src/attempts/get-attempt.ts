import { sql } from 'kysely'
import type { FailureCategory, SteeringProgress } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import type { AttemptRow, ContinuationRow } from '../schema.ts'

/** One attempt as the ledger holds it (no lease fields); `toAttemptView` shapes its public view. */
export interface AttemptRecord {
  readonly id: string
  readonly namespaceId: string
  readonly agentId: string
  readonly sessionId: string
  readonly name: string
  readonly status: AttemptRow['status']
  readonly createdAt: Date
  readonly startedAt: Date | null
  readonly cancelRequestedAt: Date | null
  /** Why a cancel was requested, when its request named a reason (a cascade names its run). */
  readonly cancelReason: string | null
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
  /** Steering recorded for it (`steer_sequence`) and the highest sequence delivered to its child. */
  readonly steering: SteeringProgress
  /** The delivery of a result to its parent run; null without a parent run or before terminal. */
  readonly delivery: AttemptDelivery | null
  /** The artifact holding the complete output when the preview is not all of it. */
  readonly artifact: {
    readonly artifactId: string
    readonly bytes: number
    readonly digest: string
    readonly expiresAt: Date
  } | null
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

/** Whose rows a read may see: a caller's namespace, or (workers, tests) any. */
export interface ReadScope {
  readonly namespaceId?: string | undefined
}

/**
 * The highest steering sequence marked delivered. The worker marks every message up to the one it
 * handed over last, so this is also how many reached the child. Guarded by `steer_sequence`: an
 * attempt nobody steered (almost all) never evaluates the subquery, so its read costs nothing more.
 */
const STEERING_DELIVERED = sql<number>`case when a.steer_sequence = 0 then 0 else coalesce(
  (select max(m.sequence) from attempt_messages m
    where m.attempt_id = a.id and m.delivered_at is not null), 0) end`

/**
 * Reads one attempt in one statement, steering progress included, or `undefined` — also when it
 * belongs to a namespace other than `scope`'s, so a caller cannot tell another tenant's attempt
 * from a missing one.
 */
export async function getAttempt(
  db: Db,
  attemptId: string,
  scope: ReadScope = {},
): Promise<AttemptRecord | undefined> {
  const record = (await getAttempts(db, [attemptId])).get(attemptId)
  return record !== undefined && inScope(record, scope) ? record : undefined
}

/**
 * Reads many attempts in one statement (any namespace: the caller applies its scope with
 * `inScope`). Attempts that do not exist are absent from the map.
 */
export async function getAttempts(
  db: Db,
  attemptIds: readonly string[],
): Promise<Map<string, AttemptRecord>> {
  if (attemptIds.length === 0) return new Map()
  // One id gets its own text: Postgres plans `id = any($1)` afresh on every execution (the size of
  // the array is unknown to a generic plan), which cost about ten times the read itself; `id = $1`
  // settles on one generic plan, and most reads (a wait's final read, a GET) are of one attempt.
  const [onlyId] = attemptIds
  const rows = await retryTransient(
    () =>
      selectAttempts(db)
        .where(
          'a.id',
          '=',
          attemptIds.length === 1 && onlyId !== undefined
            ? sql<string>`${onlyId}::uuid`
            : sql<string>`any(${[...attemptIds]}::uuid[])`,
        )
        .execute(),
    TRANSIENT_READ_RETRY,
  )
  return new Map(rows.map((row) => [row.id, toAttemptRecord(row)]))
}

/** Whether a record may be seen under `scope` (see `getAttempt`). */
export function inScope(record: AttemptRecord, scope: ReadScope): boolean {
  return scope.namespaceId === undefined || record.namespaceId === scope.namespaceId
}

/** The one shape of an attempt read: the row, its delivery, its artifact, its steering progress. */
function selectAttempts(db: Db) {
  return db
    .selectFrom('attempts as a')
    .leftJoin('continuations as c', 'c.attempt_id', 'a.id')
    .leftJoin('artifacts as art', 'art.id', 'a.artifact_id')
    .selectAll('a')
    .select(STEERING_DELIVERED.as('steering_delivered'))
    .select([
      'c.state as delivery_state',
      'c.input_digest as delivery_digest',
      'c.consumer_run_id as delivery_consumer',
      'c.suppression_reason as delivery_suppression',
      'c.suppression_run_id as delivery_suppression_run',
      'art.bytes as artifact_bytes',
      'art.digest as artifact_digest',
      'art.expires_at as artifact_expires_at',
    ])
}

interface ArtifactColumns {
  readonly artifact_bytes: string | null
  readonly artifact_digest: string | null
  readonly artifact_expires_at: Date | null
}

/** A row of the one attempt read: `toAttemptRecord` makes it a record. */
export type AttemptReadRow = AttemptRow &
  DeliveryColumns &
  ArtifactColumns & { readonly steering_delivered: number }

/**
 * The columns of an attempt read, over an attempt row named `a` (all its columns) and its artifact
 * named `art`, for a statement that knows the attempt has no delivery: one without a parent run.
 * A terminal commit reads its attempts back with these (see `commitTerminalsReturning`).
 */
export const UNDELIVERED_READ_COLUMNS = sql`
  a.*, ${STEERING_DELIVERED} as steering_delivered,
  null as delivery_state, null as delivery_digest, null as delivery_consumer,
  null as delivery_suppression, null as delivery_suppression_run,
  art.bytes as artifact_bytes, art.digest as artifact_digest, art.expires_at as artifact_expires_at
`

export function toAttemptRecord(row: AttemptReadRow): AttemptRecord {
  return {
    id: row.id,
    namespaceId: row.namespace_id,
    agentId: row.agent_id,
    sessionId: row.session_id,
    name: row.name,
    status: row.status,
    createdAt: row.created_at,
    startedAt: row.started_at,
    cancelRequestedAt: row.cancel_requested_at,
    cancelReason: row.cancel_reason,
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
    steering: { accepted: row.steer_sequence, delivered: row.steering_delivered },
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
    artifact:
      row.artifact_id === null ||
      row.artifact_bytes === null ||
      row.artifact_digest === null ||
      row.artifact_expires_at === null
        ? null
        : {
            artifactId: row.artifact_id,
            bytes: Number(row.artifact_bytes),
            digest: row.artifact_digest,
            expiresAt: row.artifact_expires_at,
          },
  }
}
