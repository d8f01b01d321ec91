// Shared by the attempt store's integration tests (one file per operation); not exported.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../../src/db.ts'
import {
  acceptDelegations,
  type AcceptDelegationInput,
  type AcceptDelegationOutcome,
} from '../../src/attempts/accept-delegations.ts'
import { claimAttempt, type ClaimAttemptOutcome } from '../../src/attempts/claim-attempt.ts'

/** A new delegation to `scripted` in `sessionId` (a continuation of `agentId` if given). */
export function scriptedDelegation(sessionId: string, agentId?: string): AcceptDelegationInput {
  return {
    namespaceId: 'default',
    sessionId,
    name: 'scripted',
    prompt: [{ type: 'text', text: 'hello' }],
    metadata: {},
    attemptId: randomUUID(),
    newAgentId: randomUUID(),
    agentId,
  }
}

/** Accepts one delegation to `scripted` in `sessionId` (a continuation of `agentId` if given). */
export async function acceptScripted(
  db: Db,
  sessionId: string,
  agentId?: string,
): Promise<{ attemptId: string; outcome: AcceptDelegationOutcome }> {
  const input = scriptedDelegation(sessionId, agentId)
  const [outcome] = await acceptDelegations(db, [input])
  if (outcome === undefined) throw new Error('no outcome')
  return { attemptId: input.attemptId, outcome }
}

/** Accepts a new delegation in `session-1` (or a continuation of `agentId`). */
export function accept(db: Db, agentId?: string) {
  return acceptScripted(db, 'session-1', agentId)
}

/** A new delegation in `session-1`, claimed by owner `w1` with a lease of `leaseTtlMs`. */
export async function acceptClaimed(
  db: Db,
  leaseTtlMs: number,
): Promise<{ attemptId: string; claim: Extract<ClaimAttemptOutcome, { kind: 'claimed' }> }> {
  const { attemptId } = await accept(db)
  const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  return { attemptId, claim }
}

/** The attempt's transitions, oldest first: `['accepted@0', 'claimed@1']`. */
export async function transitions(db: Db, attemptId: string) {
  const r = await sql<{ event: string; owner_generation: number }>`
    select event, owner_generation from attempt_transitions where attempt_id = ${attemptId} order by id
  `.execute(db)
  return r.rows.map((x) => `${x.event}@${x.owner_generation}`)
}

/** A completed result. */
export const done = { stopReason: 'completed', output: 'done', failureCategory: null }
