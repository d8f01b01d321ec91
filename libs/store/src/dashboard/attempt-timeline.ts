import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import type { AttemptRow, ContinuationRow, RunRow } from '../schema.ts'

export interface AttemptTimelineRecord {
  /** The database clock when the attempt was read. */
  readonly now: Date
  readonly attempt: {
    readonly attemptId: string
    readonly namespaceId: string
    readonly sessionId: string
    readonly agentId: string
    readonly name: string
    readonly status: AttemptRow['status']
    readonly ownerId: string | null
    readonly ownerGeneration: number
    readonly leaseExpiresAt: Date | null
    readonly parentRunId: string | null
    readonly createdAt: Date
    readonly startedAt: Date | null
    readonly cancelRequestedAt: Date | null
    readonly cancelReason: string | null
    readonly stopReason: string | null
    readonly failureCategory: string | null
    readonly outputBytes: number | null
    readonly outputDigest: string | null
    readonly outputTruncated: boolean | null
    readonly terminalAt: Date | null
  }
  readonly transitions: readonly {
    readonly fromStatus: string | null
    readonly toStatus: string
    readonly event: string
    readonly ownerId: string | null
    readonly ownerGeneration: number
    readonly at: Date
  }[]
  readonly messages: readonly {
    readonly sequence: number
    /** The message's text (its text blocks, one per line), cut to `messageChars` characters. */
    readonly content: string
    readonly createdAt: Date
    readonly deliveredAt: Date | null
  }[]
  /** Whether transitions or messages went beyond `limit` and were cut. */
  readonly truncated: boolean
  readonly artifact: {
    readonly artifactId: string
    readonly bytes: number
    readonly digest: string
    readonly createdAt: Date
    readonly expiresAt: Date
    readonly expiredAt: Date | null
  } | null
  readonly continuation: {
    readonly state: ContinuationRow['state']
    readonly parentRunId: string
    readonly consumerRunId: string | null
    readonly claimGeneration: number | null
    readonly claimDeadline: Date | null
    readonly suppressionReason: string | null
    readonly suppressionRunId: string | null
    readonly inputDigest: string
    readonly admittedAt: Date
    readonly deliveredAt: Date | null
    /** The continuation run admitted for this attempt's result, if any. */
    readonly run: {
      readonly runId: string
      readonly status: RunRow['status']
      readonly createdAt: Date
      readonly settledAt: Date | null
    } | null
  } | null
}

/**
 * Everything the ledger records about one attempt, across every namespace (the admin's view):
 * the attempt row with its artifact, continuation and continuation run, then its transitions and
 * steering messages, each at most `limit` by its index (`attempt_transitions_attempt_idx`, the
 * messages' primary key). `undefined` when no attempt has the id.
 */
export async function getAttemptTimeline(
  db: Db,
  attemptId: string,
  input: { readonly limit: number; readonly messageChars: number },
): Promise<AttemptTimelineRecord | undefined> {
  const read = () =>
    Promise.all([
      sql<AttemptColumns>`
        select now() as now, a.id, a.namespace_id, a.session_id, a.agent_id, a.name, a.status,
               a.owner_id, a.owner_generation, a.lease_expires_at, a.parent_run_id, a.created_at,
               a.started_at, a.cancel_requested_at, a.cancel_reason, a.stop_reason,
               a.failure_category, a.output_bytes, a.output_digest, a.output_truncated,
               a.terminal_at,
               art.id as artifact_id, art.bytes as artifact_bytes, art.digest as artifact_digest,
               art.created_at as artifact_created_at, art.expires_at as artifact_expires_at,
               art.expired_at as artifact_expired_at,
               c.state as c_state, c.parent_run_id as c_parent_run_id,
               c.consumer_run_id as c_consumer_run_id, c.claim_generation as c_claim_generation,
               c.claim_deadline as c_claim_deadline, c.suppression_reason as c_suppression_reason,
               c.suppression_run_id as c_suppression_run_id, c.input_digest as c_input_digest,
               c.admitted_at as c_admitted_at, c.delivered_at as c_delivered_at,
               r.id as r_id, r.status as r_status, r.created_at as r_created_at,
               r.settled_at as r_settled_at
        from attempts a
        left join artifacts art on art.id = a.artifact_id
        left join continuations c on c.attempt_id = a.id
        left join runs r on r.cause_attempt_id = a.id
        where a.id = ${attemptId}
      `.execute(db),
      sql<{
        from_status: string | null
        to_status: string
        event: string
        owner_id: string | null
        owner_generation: number
        at: Date
      }>`
        select from_status, to_status, event, owner_id, owner_generation, at
        from attempt_transitions where attempt_id = ${attemptId}
        order by id limit ${input.limit + 1}
      `.execute(db),
      sql<{ sequence: number; content: string; created_at: Date; delivered_at: Date | null }>`
        select sequence,
               left(case jsonb_typeof(content)
                      when 'array' then (select string_agg(b ->> 'text', E'\n' order by n)
                                         from jsonb_array_elements(content) with ordinality e(b, n))
                      when 'string' then content #>> '{}'
                      else content::text
                    end, ${input.messageChars}) as content,
               created_at, delivered_at
        from attempt_messages where attempt_id = ${attemptId}
        order by sequence limit ${input.limit + 1}
      `.execute(db),
    ])
  const [attempts, transitions, messages] = await retryTransient(read, TRANSIENT_READ_RETRY)
  const row = attempts.rows[0]
  if (row === undefined) return undefined
  return {
    now: row.now,
    attempt: {
      attemptId: row.id,
      namespaceId: row.namespace_id,
      sessionId: row.session_id,
      agentId: row.agent_id,
      name: row.name,
      status: row.status,
      ownerId: row.owner_id,
      ownerGeneration: row.owner_generation,
      leaseExpiresAt: row.lease_expires_at,
      parentRunId: row.parent_run_id,
      createdAt: row.created_at,
      startedAt: row.started_at,
      cancelRequestedAt: row.cancel_requested_at,
      cancelReason: row.cancel_reason,
      stopReason: row.stop_reason,
      failureCategory: row.failure_category,
      outputBytes: row.output_bytes,
      outputDigest: row.output_digest,
      outputTruncated: row.output_truncated,
      terminalAt: row.terminal_at,
    },
    transitions: transitions.rows.slice(0, input.limit).map((t) => ({
      fromStatus: t.from_status,
      toStatus: t.to_status,
      event: t.event,
      ownerId: t.owner_id,
      ownerGeneration: t.owner_generation,
      at: t.at,
    })),
    messages: messages.rows.slice(0, input.limit).map((m) => ({
      sequence: m.sequence,
      content: m.content,
      createdAt: m.created_at,
      deliveredAt: m.delivered_at,
    })),
    truncated: transitions.rows.length > input.limit || messages.rows.length > input.limit,
    artifact:
      row.artifact_id === null ||
      row.artifact_bytes === null ||
      row.artifact_digest === null ||
      row.artifact_created_at === null ||
      row.artifact_expires_at === null
        ? null
        : {
            artifactId: row.artifact_id,
            bytes: Number(row.artifact_bytes),
            digest: row.artifact_digest,
            createdAt: row.artifact_created_at,
            expiresAt: row.artifact_expires_at,
            expiredAt: row.artifact_expired_at,
          },
    continuation:
      row.c_state === null ||
      row.c_parent_run_id === null ||
      row.c_input_digest === null ||
      row.c_admitted_at === null
        ? null
        : {
            state: row.c_state,
            parentRunId: row.c_parent_run_id,
            consumerRunId: row.c_consumer_run_id,
            claimGeneration: row.c_claim_generation,
            claimDeadline: row.c_claim_deadline,
            suppressionReason: row.c_suppression_reason,
            suppressionRunId: row.c_suppression_run_id,
            inputDigest: row.c_input_digest,
            admittedAt: row.c_admitted_at,
            deliveredAt: row.c_delivered_at,
            run:
              row.r_id === null || row.r_status === null || row.r_created_at === null
                ? null
                : {
                    runId: row.r_id,
                    status: row.r_status,
                    createdAt: row.r_created_at,
                    settledAt: row.r_settled_at,
                  },
          },
  }
}

interface AttemptColumns {
  readonly now: Date
  readonly id: string
  readonly namespace_id: string
  readonly session_id: string
  readonly agent_id: string
  readonly name: string
  readonly status: AttemptRow['status']
  readonly owner_id: string | null
  readonly owner_generation: number
  readonly lease_expires_at: Date | null
  readonly parent_run_id: string | null
  readonly created_at: Date
  readonly started_at: Date | null
  readonly cancel_requested_at: Date | null
  readonly cancel_reason: string | null
  readonly stop_reason: string | null
  readonly failure_category: string | null
  readonly output_bytes: number | null
  readonly output_digest: string | null
  readonly output_truncated: boolean | null
  readonly terminal_at: Date | null
  readonly artifact_id: string | null
  /** bigint: pg returns it as a string. */
  readonly artifact_bytes: string | null
  readonly artifact_digest: string | null
  readonly artifact_created_at: Date | null
  readonly artifact_expires_at: Date | null
  readonly artifact_expired_at: Date | null
  readonly c_state: ContinuationRow['state'] | null
  readonly c_parent_run_id: string | null
  readonly c_consumer_run_id: string | null
  readonly c_claim_generation: number | null
  readonly c_claim_deadline: Date | null
  readonly c_suppression_reason: string | null
  readonly c_suppression_run_id: string | null
  readonly c_input_digest: string | null
  readonly c_admitted_at: Date | null
  readonly c_delivered_at: Date | null
  readonly r_id: string | null
  readonly r_status: RunRow['status'] | null
  readonly r_created_at: Date | null
  readonly r_settled_at: Date | null
}
