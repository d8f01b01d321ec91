import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { buildTerminalProjection, type TerminalResultInput } from './terminal-record.ts'

export interface CommitTerminalInput {
  readonly attemptId: string
  readonly ownerId: string
  readonly ownerGeneration: number
  readonly result: TerminalResultInput
}

export type CommitTerminalOutcome =
  | 'committed'
  /** Already terminal with this exact projection: a retry after a lost response. */
  | 'replayed'
  /** Already terminal with a different projection: the outcome never changes. */
  | 'refused'
  /** This owner's lease expired on the database clock. */
  | 'lease_lost'
  /** Another owner or a newer generation holds the attempt. */
  | 'stale_fence'
  | 'missing'

/**
 * Fenced terminal commit. Inputs: attempt id, owner id and generation (the fence), the result.
 * Applies only while the attempt is `running`, owned by (owner, generation), and its lease is live
 * at the database's `now()`; stores the projection and its fingerprint and appends the audit row
 * in the same statement.
 * Outcomes: committed | replayed | refused | lease_lost | stale_fence | missing.
 * Retry safety: an exact retry (same fingerprint) after a lost response is `replayed`.
 */
export async function commitTerminal(
  db: Db,
  input: CommitTerminalInput,
): Promise<CommitTerminalOutcome> {
  const { projection: p, fingerprint } = buildTerminalProjection(
    input.attemptId,
    input.ownerGeneration,
    input.result,
  )
  const applied = await sql<{ id: string }>`
    with c as (
      update attempts
      set status = 'terminal',
          stop_reason = ${p.stopReason},
          output_preview = ${p.outputPreview},
          output_truncated = ${p.outputTruncated},
          output_bytes = ${p.outputBytes},
          output_digest = ${p.outputDigest},
          failure_category = ${p.failureCategory},
          fingerprint = ${fingerprint},
          terminal_at = now(),
          lease_expires_at = null
      where id = ${input.attemptId}
        and status = 'running'
        and owner_id = ${input.ownerId}
        and owner_generation = ${input.ownerGeneration}
        and lease_expires_at > now()
      returning id, owner_generation
    ), t as (
      insert into attempt_transitions (attempt_id, from_status, to_status, event, owner_id, owner_generation)
      select id, 'running', 'terminal', 'committed', ${input.ownerId}, owner_generation from c
    )
    select id from c
  `.execute(db)
  if (applied.rows.length === 1) return 'committed'
  return classifyRefusedCommit(db, input, fingerprint)
}

async function classifyRefusedCommit(
  db: Db,
  input: CommitTerminalInput,
  fingerprint: string,
): Promise<CommitTerminalOutcome> {
  const current = await sql<{
    status: string
    fingerprint: string | null
    owner_id: string | null
    owner_generation: number
    live: boolean | null
  }>`
    select status, fingerprint, owner_id, owner_generation, lease_expires_at > now() as live
    from attempts where id = ${input.attemptId}
  `.execute(db)
  const row = current.rows[0]
  if (row === undefined) return 'missing'
  if (row.status === 'terminal') return row.fingerprint === fingerprint ? 'replayed' : 'refused'
  if (row.owner_id !== input.ownerId || row.owner_generation !== input.ownerGeneration)
    return 'stale_fence'
  return 'lease_lost'
}
