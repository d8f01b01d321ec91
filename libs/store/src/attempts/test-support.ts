// Shared by this package's integration tests (not exported): one delegation as the API records it.
import { randomUUID } from 'node:crypto'
import type { Db } from '../db.ts'
import { acceptDelegations, type AcceptDelegationOutcome } from './accept-delegations.ts'

/** Accepts one delegation to `scripted` in `sessionId` (a continuation of `agentId` if given). */
export async function acceptScripted(
  db: Db,
  sessionId: string,
  agentId?: string,
): Promise<{ attemptId: string; outcome: AcceptDelegationOutcome }> {
  const attemptId = randomUUID()
  const [outcome] = await acceptDelegations(db, [
    {
      sessionId,
      name: 'scripted',
      prompt: [{ type: 'text', text: 'hello' }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
      agentId,
    },
  ])
  if (outcome === undefined) throw new Error('no outcome')
  return { attemptId, outcome }
}
