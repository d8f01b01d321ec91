// Shared by the continuation store's integration tests; not exported.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../../src/db.ts'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { claimAttempt } from '../../src/attempts/claim-attempt.ts'
import { commitTerminal } from '../../src/attempts/commit-terminal.ts'
import type { TerminalResultInput } from '../../src/attempts/terminal-record.ts'
import { createRun } from '../../src/runs/create-run.ts'
import { endRun } from '../../src/runs/end-run.ts'

export const NS = 'default'

/** A fresh session with an active user run. */
export async function sessionWithRun(db: Db): Promise<{ sessionId: string; runId: string }> {
  const sessionId = `s-${randomUUID()}`
  const runId = randomUUID()
  const created = await createRun(db, {
    namespaceId: NS,
    sessionId,
    runId,
    consume: [],
    leaseMs: 60_000,
  })
  if (created.kind !== 'created') throw new Error(`run not created: ${created.kind}`)
  return { sessionId, runId }
}

/** Accepts a delegation of `runId` in its session and claims it as `worker`. */
export async function delegateFrom(
  db: Db,
  parent: { sessionId: string; runId: string },
  metadata: Record<string, unknown> = { traceId: 'trace-1' },
): Promise<{ attemptId: string; agentId: string; generation: number; traceId?: string }> {
  const attemptId = randomUUID()
  const agentId = randomUUID()
  const [outcome] = await acceptDelegations(db, [
    {
      namespaceId: NS,
      sessionId: parent.sessionId,
      name: 'scripted',
      prompt: [{ type: 'text', text: 'work' }],
      metadata,
      attemptId,
      newAgentId: agentId,
      parentRunId: parent.runId,
    },
  ])
  if (outcome?.kind !== 'accepted') throw new Error(`not accepted: ${outcome?.kind}`)
  const claim = await claimAttempt(db, { attemptId, ownerId: 'worker', leaseTtlMs: 60_000 })
  if (claim.kind !== 'claimed') throw new Error(`not claimed: ${claim.kind}`)
  const generation = claim.attempt.ownerGeneration
  return typeof metadata.traceId === 'string'
    ? { attemptId, agentId, generation, traceId: metadata.traceId }
    : { attemptId, agentId, generation }
}

/** The worker's terminal commit of a claimed attempt (binding its trace id, as a worker does). */
export function finish(
  db: Db,
  attempt: { attemptId: string; generation: number; traceId?: string },
  result: TerminalResultInput = {
    stopReason: 'completed',
    output: 'result',
    failureCategory: null,
  },
) {
  return commitTerminal(db, {
    attemptId: attempt.attemptId,
    ownerId: 'worker',
    ownerGeneration: attempt.generation,
    result,
    traceId: attempt.traceId,
  })
}

/** Every run of a session, as plain rows (for before/after comparisons). */
export async function runsOf(db: Db, sessionId: string) {
  const r = await sql<Record<string, unknown>>`
    select * from runs where session_id = ${sessionId} order by created_at, id
  `.execute(db)
  return r.rows
}

export async function continuationRows(db: Db, attemptId: string) {
  const r = await sql<Record<string, unknown>>`
    select * from continuations where attempt_id = ${attemptId}
  `.execute(db)
  return r.rows
}

/** Moves a claimed continuation run's lease and claim deadline into the past. */
export async function expireClaim(db: Db, runId: string): Promise<void> {
  await sql`
    update runs set lease_expires_at = now() - interval '1 second' where id = ${runId}::uuid
  `.execute(db)
  await sql`
    update continuations set claim_deadline = now() - interval '1 second'
    where consumer_run_id = ${runId}::uuid
  `.execute(db)
}

/** A result admitted as a continuation: its run ended before it landed; pending, unclaimed. */
export async function pendingContinuation(db: Db) {
  const parent = await sessionWithRun(db)
  const child = await delegateFrom(db, parent)
  await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
  await finish(db, child)
  return { parent, child }
}

/** An explicit run of `sessionId` that consumes `attemptIds` (a minute's lease). */
export function explicitRun(db: Db, sessionId: string, attemptIds: readonly string[]) {
  return createRun(db, {
    namespaceId: NS,
    sessionId,
    runId: randomUUID(),
    consume: attemptIds,
    leaseMs: 60_000,
  })
}
