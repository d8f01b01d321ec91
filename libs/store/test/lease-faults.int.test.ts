// The fenced lease statements under the faults a dependency causes: a claim whose answer was lost,
// a renewal next to a row another transaction holds, a claim handed back before its child ran.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import {
  acceptDelegations,
  claimAttempts,
  commitTerminal,
  createDb,
  releaseClaims,
  renewLeases,
  type Db,
} from '../src/index.ts'

async function acceptMany(db: Db, n: number): Promise<string[]> {
  const inputs = Array.from({ length: n }, () => ({
    namespaceId: 'default',
    sessionId: 'lease-faults',
    name: 'scripted',
    prompt: [{ type: 'text' as const, text: 'x' }],
    metadata: {},
    attemptId: randomUUID(),
    newAgentId: randomUUID(),
  }))
  await acceptDelegations(db, inputs)
  return inputs.map((i) => i.attemptId)
}

async function events(db: Db, attemptId: string): Promise<string[]> {
  const r = await sql<{ e: string }>`
    select event || '@' || owner_generation as e from attempt_transitions
    where attempt_id = ${attemptId} order by id
  `.execute(db)
  return r.rows.map((row) => row.e)
}

const done = { stopReason: 'completed', output: 'done', failureCategory: null }

describe('lease statements under dependency faults', () => {
  test('a claim group retried after its answer was lost: held, unless its owner adopts it; adopted, the same lease', async ({
    db,
  }) => {
    const ids = await acceptMany(db, 5)
    const owner = { ownerId: 'w-lost-answer', leaseTtlMs: 10_000 }
    // The group committed; its answer never reached the worker.
    const first = await claimAttempts(db, { ...owner, attemptIds: ids })
    const generations = first.map((o) => (o.kind === 'claimed' ? o.attempt.ownerGeneration : -1))
    // A plain retry cannot tell its own claim from a foreign one.
    const plain = await claimAttempts(db, { ...owner, attemptIds: ids })
    expect(plain.map((o) => o.kind)).toEqual(ids.map(() => 'held'))
    // Another owner adopts nothing.
    const foreign = await claimAttempts(db, {
      ownerId: 'w-other',
      leaseTtlMs: 10_000,
      attemptIds: ids,
      adopt: ids,
    })
    expect(foreign.map((o) => o.kind)).toEqual(ids.map(() => 'held'))
    // The owner that sent it, naming the claims it never heard back from, gets its lease back.
    const adopted = await claimAttempts(db, { ...owner, attemptIds: ids, adopt: ids })
    expect(adopted.map((o) => o.kind)).toEqual(ids.map(() => 'claimed'))
    expect(adopted.map((o) => (o.kind === 'claimed' ? o.attempt.ownerGeneration : -2))).toEqual(
      generations,
    )
    for (const id of ids) expect(await events(db, id)).toEqual(['accepted@0', 'claimed@1'])
  })

  test('a renewal next to a row another transaction holds: the others renew at once, that one is neither renewed nor lost', async ({
    databaseUrl,
    db,
  }) => {
    const ids = await acceptMany(db, 3)
    const ownerId = 'w-locked'
    const claims = await claimAttempts(db, { ownerId, leaseTtlMs: 10_000, attemptIds: ids })
    const leases = claims.map((o, i) => {
      if (o.kind !== 'claimed') throw new Error(o.kind)
      return { attemptId: ids[i] ?? '', ownerGeneration: o.attempt.ownerGeneration }
    })
    const holder = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      let releaseLock!: () => void
      const lockHeld = new Promise<void>((resolve) => (releaseLock = resolve))
      let locked!: () => void
      const isLocked = new Promise<void>((resolve) => (locked = resolve))
      const holding = holder.transaction().execute(async (trx) => {
        await sql`select id from attempts where id = ${ids[1]} for update`.execute(trx)
        locked()
        await lockHeld
      })
      await isLocked
      // Bounded far from the time it takes: a renewal that waited for the lock would only end
      // once the lock goes, which happens after the race.
      const renewed = await Promise.race([
        renewLeases(db, { ownerId, leases, leaseTtlMs: 10_000 }),
        new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 10_000)),
      ])
      releaseLock()
      await holding
      expect(renewed === 'blocked' ? renewed : renewed.map((r) => r.status)).toEqual([
        'renewed',
        'skipped',
        'renewed',
      ])
    } finally {
      await holder.destroy()
    }
  })

  test('a renewal next to a row another transaction only references (a steering message being inserted) renews it, and answers a locked one skipped and a stale one lost', async ({
    databaseUrl,
    db,
  }) => {
    const ids = await acceptMany(db, 3)
    const ownerId = 'w-referenced'
    const claims = await claimAttempts(db, { ownerId, leaseTtlMs: 10_000, attemptIds: ids })
    const leases = claims.map((o, i) => {
      if (o.kind !== 'claimed') throw new Error(o.kind)
      return { attemptId: ids[i] ?? '', ownerGeneration: o.attempt.ownerGeneration }
    })
    const holder = createDb({ connectionString: databaseUrl, maxConnections: 2 })
    try {
      let releaseLocks!: () => void
      const locksHeld = new Promise<void>((resolve) => (releaseLocks = resolve))
      let locked!: () => void
      const areLocked = new Promise<void>((resolve) => (locked = resolve))
      const holding = holder.transaction().execute(async (trx) => {
        // What inserting a row that references the attempt takes: a lock on its key only.
        await sql`select id from attempts where id = ${ids[0]} for key share`.execute(trx)
        await sql`select id from attempts where id = ${ids[1]} for update`.execute(trx)
        locked()
        await locksHeld
      })
      await areLocked
      const stale = {
        attemptId: ids[2] ?? '',
        ownerGeneration: (leases[2]?.ownerGeneration ?? 0) + 1,
      }
      const renewed = await Promise.race([
        renewLeases(db, {
          ownerId,
          leases: [leases[0], leases[1], stale].flatMap((l) => l ?? []),
          leaseTtlMs: 10_000,
        }),
        new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 10_000)),
      ])
      releaseLocks()
      await holding
      expect(renewed === 'blocked' ? renewed : renewed.map((r) => r.status)).toEqual([
        'renewed',
        'skipped',
        'lost',
      ])
    } finally {
      await holder.destroy()
    }
  })

  test('a claim handed back before its child ran: accepted again, claimed by the next owner, the first owner fenced out', async ({
    db,
  }) => {
    const [attemptId = ''] = await acceptMany(db, 1)
    const [claimed] = await claimAttempts(db, {
      ownerId: 'w-stopping',
      leaseTtlMs: 10_000,
      attemptIds: [attemptId],
    })
    if (claimed?.kind !== 'claimed') throw new Error(String(claimed?.kind))
    const generation = claimed.attempt.ownerGeneration
    // Another owner's name, or a stale generation, hands back nothing.
    expect(await releaseClaims(db, { ownerId: 'w-other', claims: [{ attemptId }] })).toEqual([])
    expect(
      await releaseClaims(db, {
        ownerId: 'w-stopping',
        claims: [{ attemptId, ownerGeneration: generation + 1 }],
      }),
    ).toEqual([])
    expect(
      await releaseClaims(db, {
        ownerId: 'w-stopping',
        claims: [{ attemptId, ownerGeneration: generation }],
      }),
    ).toEqual([attemptId])
    // A repeat finds it accepted.
    expect(await releaseClaims(db, { ownerId: 'w-stopping', claims: [{ attemptId }] })).toEqual([])
    const [next] = await claimAttempts(db, {
      ownerId: 'w-next',
      leaseTtlMs: 10_000,
      attemptIds: [attemptId],
    })
    if (next?.kind !== 'claimed') throw new Error(String(next?.kind))
    expect(next.attempt.ownerGeneration).toBe(generation + 1)
    expect(
      await commitTerminal(db, {
        attemptId,
        ownerId: 'w-stopping',
        ownerGeneration: generation,
        result: done,
      }),
    ).toBe('stale_fence')
    expect(
      await commitTerminal(db, {
        attemptId,
        ownerId: 'w-next',
        ownerGeneration: next.attempt.ownerGeneration,
        result: done,
      }),
    ).toBe('committed')
    expect(await events(db, attemptId)).toEqual([
      'accepted@0',
      'claimed@1',
      'released@1',
      'claimed@2',
      'committed@2',
    ])
  })
})
