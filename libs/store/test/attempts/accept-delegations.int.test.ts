import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb, type Db } from '../../src/db.ts'
import {
  acceptDelegations,
  type AcceptDelegationInput,
} from '../../src/attempts/accept-delegations.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import { accept, acceptScripted } from '../support/attempts.ts'

/** A new keyed delegation in `sessionId`; `request` stands for what the caller asked. */
function keyed(sessionId: string, idempotencyKey: string, request: string) {
  return {
    namespaceId: 'default',
    sessionId,
    name: 'scripted',
    prompt: [{ type: 'text', text: request }],
    metadata: {},
    attemptId: randomUUID(),
    newAgentId: randomUUID(),
    idempotencyKey,
    requestDigest: `digest-of-${request}`,
  }
}

async function acceptOne(db: Db, input: AcceptDelegationInput) {
  const [outcome] = await acceptDelegations(db, [input])
  return outcome
}

async function counts(db: Db, sessionId: string) {
  const r = await sql<{ attempts: number; agents: number; transitions: number }>`
    select (select count(*)::int from attempts where session_id = ${sessionId}) as attempts,
           (select count(*)::int from agents where session_id = ${sessionId}) as agents,
           (select count(*)::int from attempt_transitions t join attempts a on a.id = t.attempt_id
             where a.session_id = ${sessionId}) as transitions
  `.execute(db)
  return r.rows[0]
}

describe('acceptDelegations', () => {
  test('one batch: a repeated key is replayed or refused by its request, and only first uses write', async ({
    db,
  }) => {
    const first = keyed('s-batch', 'key-a', 'one')
    const outcomes = await acceptDelegations(db, [
      first,
      keyed('s-batch', 'key-a', 'one'),
      keyed('s-batch', 'key-a', 'other'),
      keyed('s-batch', 'key-b', 'one'),
      keyed('s-batch-2', 'key-a', 'one'),
    ])
    expect(outcomes.map((o) => o.kind)).toEqual([
      'accepted',
      'replayed',
      'key_reused',
      'accepted',
      'accepted',
    ])
    expect(outcomes[1]).toEqual({
      kind: 'replayed',
      agentId: first.newAgentId,
      attemptId: first.attemptId,
    })
    expect(await counts(db, 's-batch')).toEqual({ attempts: 2, agents: 2, transitions: 2 })

    // A later retry writes nothing and answers the attempt the key created.
    const [retry] = await acceptDelegations(db, [keyed('s-batch', 'key-a', 'one')])
    expect(retry).toEqual({
      kind: 'replayed',
      agentId: first.newAgentId,
      attemptId: first.attemptId,
    })
    expect(await counts(db, 's-batch')).toEqual({ attempts: 2, agents: 2, transitions: 2 })
  })

  test('concurrent batches racing for one key: exactly one accepts, the others answer its attempt', async ({
    db,
  }) => {
    const batches = await Promise.all(
      [1, 2, 3, 4].map(() => acceptDelegations(db, [keyed('s-race', 'key', 'same')])),
    )
    const outcomes = batches.flat()
    expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(1)
    expect(outcomes.filter((o) => o.kind === 'replayed')).toHaveLength(3)
    const attempts = new Set(outcomes.map((o) => ('attemptId' in o ? o.attemptId : undefined)))
    expect(attempts.size).toBe(1)
    expect(await counts(db, 's-race')).toEqual({ attempts: 1, agents: 1, transitions: 1 })
  })

  test('a keyed continuation: accepted once, replayed on retry, refused for a busy or unknown agent', async ({
    db,
  }) => {
    const [created] = await acceptDelegations(db, [keyed('s-cont', 'create', 'one')])
    if (created?.kind !== 'accepted') throw new Error(String(created?.kind))
    // The agent's first attempt is still accepted (not terminal): a continuation is busy.
    const busy = await acceptOne(db, {
      ...keyed('s-cont', 'continue', 'two'),
      agentId: created.agentId,
    })
    expect(busy).toEqual({ kind: 'agent_busy' })
    // Cancelled while queued: terminal, so the agent may continue.
    expect(await requestCancel(db, { attemptId: created.attemptId, reason: null })).toEqual({
      kind: 'cancelled_queued',
    })
    const continuation = { ...keyed('s-cont', 'continue', 'two'), agentId: created.agentId }
    const accepted = await acceptOne(db, continuation)
    expect(accepted).toEqual({
      kind: 'accepted',
      agentId: created.agentId,
      attemptId: continuation.attemptId,
    })
    expect(await acceptOne(db, { ...continuation, attemptId: randomUUID() })).toEqual({
      kind: 'replayed',
      agentId: created.agentId,
      attemptId: continuation.attemptId,
    })
    expect(
      await acceptOne(db, { ...keyed('s-cont', 'stranger', 'x'), agentId: randomUUID() }),
    ).toEqual({ kind: 'agent_not_found' })
    expect(await counts(db, 's-cont')).toEqual({ attempts: 2, agents: 1, transitions: 3 })
  })

  test('one batch mixes new, keyed and continued delegations and answers each, in one statement', async ({
    databaseUrl,
    db,
  }) => {
    const idle = await acceptScripted(db, 's-mixed')
    const busy = await acceptScripted(db, 's-mixed')
    if (idle.outcome.kind !== 'accepted' || busy.outcome.kind !== 'accepted')
      throw new Error('setup')
    await requestCancel(db, { attemptId: idle.attemptId, reason: null })
    const fresh = (extra: Partial<AcceptDelegationInput> = {}): AcceptDelegationInput => ({
      ...keyed('s-mixed', randomUUID(), 'x'),
      idempotencyKey: undefined,
      ...extra,
    })
    let statements = 0
    const counted = createDb({ connectionString: databaseUrl, onQuery: () => (statements += 1) })
    try {
      const allAccepted = [
        fresh(),
        keyed('s-mixed', 'k-1', 'x'),
        fresh({ agentId: idle.outcome.agentId }),
      ]
      const outcomes = await acceptDelegations(counted, allAccepted)
      expect(outcomes.map((o) => o.kind)).toEqual(['accepted', 'accepted', 'accepted'])
      expect(outcomes[2]).toEqual({
        kind: 'accepted',
        agentId: idle.outcome.agentId,
        attemptId: allAccepted[2]?.attemptId,
      })
      expect(statements).toBe(1)

      statements = 0
      const mixed = await acceptDelegations(counted, [
        fresh(),
        fresh({ agentId: busy.outcome.agentId }),
        fresh({ agentId: randomUUID() }),
        fresh({ agentId: idle.outcome.agentId, sessionId: 's-elsewhere' }),
        keyed('s-mixed', 'k-1', 'x'),
      ])
      expect(mixed.map((o) => o.kind)).toEqual([
        'accepted',
        'agent_busy',
        'agent_not_found',
        'agent_not_found',
        'replayed',
      ])
      // The second statement only explains the refusals; nothing refused was written.
      expect(statements).toBe(2)
      expect(await counts(db, 's-mixed')).toEqual({ attempts: 6, agents: 5, transitions: 7 })
      expect(await counts(db, 's-elsewhere')).toEqual({ attempts: 0, agents: 0, transitions: 0 })
    } finally {
      await counted.destroy()
    }
  })

  test('one non-terminal attempt per agent: a continuation waits for terminal', async ({ db }) => {
    const first = await accept(db)
    if (first.outcome.kind !== 'accepted') throw new Error(first.outcome.kind)
    const agentId = first.outcome.agentId
    expect((await accept(db, agentId)).outcome.kind).toBe('agent_busy')
    expect((await accept(db, randomUUID())).outcome.kind).toBe('agent_not_found')
    await requestCancel(db, { attemptId: first.attemptId, reason: null })
    const continuation = await accept(db, agentId)
    expect(continuation.outcome).toMatchObject({ kind: 'accepted', agentId })
    expect(continuation.attemptId).not.toBe(first.attemptId)
  })
})
