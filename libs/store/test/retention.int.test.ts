import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { createDb, type Db } from '../src/db.ts'
import { acceptDelegations } from '../src/attempts/accept-delegations.ts'
import { claimAttempts } from '../src/attempts/claim-attempt.ts'
import { commitTerminals } from '../src/attempts/commit-terminal.ts'
import { endRun } from '../src/runs/end-run.ts'
import { removeExpiredHistory } from '../src/retention/remove-expired-history.ts'
import { acceptScripted, done, scriptedDelegation } from './support/attempts.ts'
import { NS, delegateFrom, finish, sessionWithRun } from './support/continuations.ts'

const DAY_MS = 24 * 60 * 60 * 1000
const RETENTION = { defaultRetentionMs: 30 * DAY_MS, limit: 500 }

/** `count` delegations accepted, claimed and committed `completed`; their attempt ids. */
async function finished(db: Db, count: number, session = 'retention'): Promise<string[]> {
  const inputs = Array.from({ length: count }, () => scriptedDelegation(session))
  await acceptDelegations(db, inputs)
  const ids = inputs.map((i) => i.attemptId)
  const claims = await claimAttempts(db, { ownerId: 'w0', leaseTtlMs: 30_000, attemptIds: ids })
  await commitTerminals(
    db,
    claims.map((c, i) => {
      if (c.kind !== 'claimed') throw new Error(c.kind)
      return {
        attemptId: ids[i] as string,
        ownerId: 'w0',
        ownerGeneration: c.attempt.ownerGeneration,
        result: done,
      }
    }),
  )
  return ids
}

/** Moves attempts' times (and their agents' other attempts' with them) `days` into the past. */
async function age(db: Db, attemptIds: readonly string[], days: number): Promise<void> {
  await sql`
    update attempts set created_at = created_at - ${days} * interval '1 day',
                        started_at = started_at - ${days} * interval '1 day',
                        terminal_at = terminal_at - ${days} * interval '1 day'
    where id = any(${attemptIds}::uuid[])`.execute(db)
}

/**
 * An agent whose first attempt ended `days` ago and whose continuation is queued, or finished
 * `recentDays` ago when given: both attempt ids.
 */
async function agentInUse(db: Db, days: number, recentDays?: number): Promise<string[]> {
  const session = `s-${randomUUID()}`
  const [first = ''] = await finished(db, 1, session)
  await age(db, [first], days)
  const { rows } = await sql<{ agent_id: string }>`
    select agent_id from attempts where id = ${first}::uuid`.execute(db)
  const again = await acceptScripted(db, session, rows[0]?.agent_id)
  expect(again.outcome.kind).toBe('accepted')
  if (recentDays !== undefined) {
    const [claim] = await claimAttempts(db, {
      ownerId: 'w0',
      leaseTtlMs: 30_000,
      attemptIds: [again.attemptId],
    })
    if (claim?.kind !== 'claimed') throw new Error(claim?.kind)
    const generation = claim.attempt.ownerGeneration
    await commitTerminals(db, [
      { attemptId: again.attemptId, ownerId: 'w0', ownerGeneration: generation, result: done },
    ])
    await age(db, [again.attemptId], recentDays)
  }
  return [first, again.attemptId]
}

async function present(db: Db, attemptIds: readonly string[]) {
  const r = await sql<{ attempts: number; transitions: number }>`
    select (select count(*)::int from attempts where id = any(${attemptIds}::uuid[])) as attempts,
           (select count(*)::int from attempt_transitions
            where attempt_id = any(${attemptIds}::uuid[])) as transitions`.execute(db)
  return r.rows[0]
}

/** Batches until one removes nothing. */
async function removeAll(db: Db, input = RETENTION) {
  const total = { attempts: 0, agents: 0, runs: 0 }
  let cursors = {}
  for (let i = 0; i < 100; i++) {
    const batch = await removeExpiredHistory(db, { ...input, ...cursors })
    cursors = { agentCursor: batch.agentCursor, runCursor: batch.runCursor }
    total.attempts += batch.attempts
    total.agents += batch.agents
    total.runs += batch.runs
    if (batch.attempts + batch.runs === 0 && batch.agentCursor.size === 0) return total
  }
  throw new Error('retention never finished')
}

describe('ledger retention', () => {
  test('removes old finished agents with their history and ended runs; keeps young, live and open ones', async ({
    db,
  }) => {
    const old = await finished(db, 30)
    await age(db, old, 40)
    const young = await finished(db, 5)
    await age(db, young, 20)

    // An old agent whose continuation still runs keeps its whole history.
    const inUse = await agentInUse(db, 40)
    // So does one whose latest attempt ended within the retention.
    const recent = await agentInUse(db, 40, 20)

    // An old result whose continuation is still held for its active parent run stays.
    const parent = await sessionWithRun(db)
    const held = await delegateFrom(db, parent)
    expect(await finish(db, held)).toBe('committed')
    await age(db, [held.attemptId], 40)

    // An ended run long ago, its child delivered: both go.
    const ended = await sessionWithRun(db)
    const child = await delegateFrom(db, ended)
    expect(await finish(db, child)).toBe('committed')
    await age(db, [child.attemptId], 40)
    await endRun(db, { namespaceId: NS, runId: ended.runId, status: 'completed' })
    // Its result was delivered by a continuation run that completed, all long ago.
    await sql`
      update continuations set state = 'delivered', delivered_at = now() - interval '40 days'
      where attempt_id = ${child.attemptId}::uuid`.execute(db)
    await sql`
      update runs set status = 'completed', settled_at = now() - interval '40 days'
      where id = ${ended.runId}::uuid or cause_attempt_id = ${child.attemptId}::uuid`.execute(db)

    const removed = await removeAll(db)
    expect(await present(db, old)).toEqual({ attempts: 0, transitions: 0 })
    expect(await present(db, young)).toEqual({ attempts: 5, transitions: 15 })
    expect((await present(db, inUse))?.attempts).toBe(2)
    expect((await present(db, recent))?.attempts).toBe(2)
    expect((await present(db, [held.attemptId]))?.attempts).toBe(1)
    expect((await present(db, [child.attemptId]))?.attempts).toBe(0)
    const runs = await sql<{
      id: string
    }>`select id from runs where id = any(${[ended.runId, parent.runId]}::uuid[])`.execute(db)
    expect(runs.rows.map((r) => r.id)).toEqual([parent.runId])
    expect(removed).toEqual({ attempts: 31, agents: 31, runs: 1 })

    // A namespace's own retention wins over the default.
    await sql`update namespaces set ledger_retention_ms = ${10 * DAY_MS} where id = 'default'`.execute(
      db,
    )
    expect((await removeAll(db)).attempts).toBe(7)
    expect(await present(db, young)).toEqual({ attempts: 0, transitions: 0 })
  })

  test('a batch in progress holds nothing a claim or commit needs', async ({ db, databaseUrl }) => {
    const old = await finished(db, 200)
    await age(db, old, 40)
    const other = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      await db.transaction().execute(async (trx) => {
        // The batch has removed its rows and holds its locks until this transaction ends.
        const batch = await removeExpiredHistory(trx, RETENTION)
        expect(batch.attempts).toBe(200)
        // Meanwhile, on another connection, a delegation is accepted, claimed and committed.
        const [attemptId] = await finished(other, 1, 'meanwhile')
        expect(await present(other, [attemptId ?? ''])).toEqual({ attempts: 1, transitions: 3 })
        // A second batch on another connection finds the retention lock taken: it reads nothing,
        // fails nothing, and leaves the backlog to the first.
        expect(await removeExpiredHistory(other, RETENTION)).toEqual({
          busy: true,
          attempts: 0,
          agents: 0,
          runs: 0,
          agentCursor: new Map(),
          runCursor: new Map(),
        })
      })
    } finally {
      await other.destroy()
    }
    expect(await present(db, old)).toEqual({ attempts: 0, transitions: 0 })
  })

  test('rows that must stay do not hold back the rows behind them', async ({ db }) => {
    // The oldest agent is still in use; a batch of one looks at it, then goes on past it.
    const inUse = await agentInUse(db, 50)
    const behind = await finished(db, 3, `s-${randomUUID()}`)
    await age(db, behind, 40)
    const removed = await removeAll(db, { ...RETENTION, limit: 1 })
    expect(removed.attempts).toBe(3)
    expect((await present(db, inUse))?.attempts).toBe(2)
  })

  test("an old attempt goes with its webhook deliveries; a hosted session's conversation stays", async ({
    db,
  }) => {
    const [pushed = ''] = await finished(db, 1, 'retention-pushed')
    await sql`
      insert into webhook_deliveries (id, namespace_id, session_id, event_type, attempt_id, state)
      values (${`msg_attempt_terminal_${pushed}`}, ${NS}, 'retention-pushed', 'attempt.terminal',
              ${pushed}::uuid, 'delivered')`.execute(db)
    const [hosted = ''] = await finished(db, 1, 'retention-hosted')
    await sql`
      update sessions set profile = 'lead',
        parent_agent_id = (select agent_id from attempts where id = ${hosted}::uuid)
      where id = 'retention-hosted'`.execute(db)
    await age(db, [pushed, hosted], 40)

    await removeAll(db)

    expect(await present(db, [pushed])).toEqual({ attempts: 0, transitions: 0 })
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from webhook_deliveries where attempt_id = ${pushed}::uuid`.execute(
      db,
    )
    expect(rows[0]?.n).toBe(0)
    expect((await present(db, [hosted]))?.attempts).toBe(1)
  })
})
