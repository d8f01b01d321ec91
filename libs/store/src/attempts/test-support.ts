// Shared by the attempt store's integration tests (one file per operation).
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { acceptDelegation } from './accept-delegation.ts'

/** Accepts a new delegation (or a continuation of `agentId`). */
export async function accept(db: Db, agentId?: string) {
  const attemptId = randomUUID()
  const outcome = await acceptDelegation(db, {
    sessionId: 'session-1',
    name: 'scripted',
    prompt: [{ type: 'text', text: 'hello' }],
    metadata: {},
    attemptId,
    newAgentId: randomUUID(),
    ...(agentId === undefined ? {} : { agentId }),
  })
  return { attemptId, outcome }
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
