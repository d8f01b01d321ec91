import type { FailureCategory } from '@baton/contracts'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import type { AttemptRow } from '../schema.ts'

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
  /** The artifact holding the complete output when the preview is not all of it. */
  readonly artifact: {
    readonly artifactId: string
    readonly bytes: number
    readonly digest: string
    readonly expiresAt: Date
  } | null
}

/** Reads one attempt, or `undefined`. */
export async function getAttempt(db: Db, attemptId: string): Promise<AttemptRecord | undefined> {
  const row = await retryTransient(
    () =>
      db
        .selectFrom('attempts')
        .leftJoin('artifacts', 'artifacts.id', 'attempts.artifact_id')
        .selectAll('attempts')
        .select([
          'artifacts.bytes as artifact_bytes',
          'artifacts.digest as artifact_digest',
          'artifacts.expires_at as artifact_expires_at',
        ])
        .where('attempts.id', '=', attemptId)
        .executeTakeFirst(),
    TRANSIENT_READ_RETRY,
  )
  return row === undefined ? undefined : toAttemptRecord(row)
}

interface AttemptWithArtifact extends AttemptRow {
  readonly artifact_bytes: string | null
  readonly artifact_digest: string | null
  readonly artifact_expires_at: Date | null
}

function toAttemptRecord(row: AttemptWithArtifact): AttemptRecord {
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
