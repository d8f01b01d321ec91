import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { deleteSession } from '../../src/continuations/delete-session.ts'
import { createDb, type Db } from '../../src/db.ts'
import { endRun } from '../../src/runs/end-run.ts'
import { NS, delegateFrom, finish, runsOf, sessionWithRun } from '../support/continuations.ts'

function delegation(sessionId: string, parentRunId?: string) {
  return {
    namespaceId: NS,
    sessionId,
    name: 'scripted',
    prompt: 'x',
    metadata: {},
    attemptId: randomUUID(),
    newAgentId: randomUUID(),
    ...(parentRunId === undefined ? {} : { parentRunId }),
  }
}

async function attemptCount(db: Db, sessionId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    select count(*)::int as n from attempts where session_id = ${sessionId}
  `.execute(db)
  return r.rows[0]?.n ?? -1
}

/**
 * Records, at the commit of every transaction that inserts an attempt into a `fence-race-`
 * session, whether that session's deletion fence was already committed: a deferred constraint
 * trigger runs just before its transaction commits, and each statement of it reads what is
 * committed by then. A row here is an attempt accepted after the fence.
 */
async function watchAcceptsAfterFence(db: Db): Promise<() => Promise<string[]>> {
  await sql`
    create table fence_race_violations (attempt_id uuid primary key);
    create function fence_race_check() returns trigger language plpgsql as $f$
    begin
      if exists (select 1 from sessions s where s.namespace_id = new.namespace_id
                 and s.id = new.session_id and s.deleted_at is not null) then
        insert into fence_race_violations values (new.id);
      end if;
      return null;
    end
    $f$;
    create constraint trigger fence_race_check after insert on attempts
      deferrable initially deferred for each row
      when (new.session_id like 'fence-race-%')
      execute function fence_race_check();
  `.execute(db)
  return async () => {
    const r = await sql<{ attempt_id: string }>`
      select attempt_id from fence_race_violations
    `.execute(db)
    await sql`
      drop trigger fence_race_check on attempts;
      drop function fence_race_check();
      drop table fence_race_violations;
    `.execute(db)
    return r.rows.map((row) => row.attempt_id)
  }
}

describe('the deletion fence', () => {
  test('delete against accept, 200 concurrent pairs: no attempt is ever accepted after the fence', async ({
    db,
    databaseUrl,
  }) => {
    const pairs = 200
    const sessions = Array.from({ length: pairs }, (_, i) => `fence-race-${i}-${randomUUID()}`)
    // Each session exists before its race (its first delegation created it).
    await acceptDelegations(
      db,
      sessions.map((s) => delegation(s)),
    )
    const violations = await watchAcceptsAfterFence(db)
    const racers = createDb({ connectionString: databaseUrl, maxConnections: 40 })
    try {
      const results = await Promise.all(
        sessions.map(async (sessionId) => {
          const input = delegation(sessionId)
          const [[accepted], deleted] = await Promise.all([
            acceptDelegations(racers, [input]),
            deleteSession(racers, { namespaceId: NS, sessionId }),
          ])
          return { sessionId, input, accepted, deleted }
        }),
      )
      expect(await violations()).toEqual([])
      const kinds = new Map<string, number>()
      for (const r of results) {
        expect(r.deleted).toBe('deleted')
        const kind = r.accepted?.kind ?? 'none'
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
        // Accepted: before the fence, so the session holds it; refused: nothing was written.
        expect(await attemptCount(db, r.sessionId)).toBe(kind === 'accepted' ? 2 : 1)
      }
      expect([...kinds.keys()].every((k) => k === 'accepted' || k === 'session_deleted')).toBe(true)
    } finally {
      await racers.destroy()
    }
  })
})

describe('the parent run of a delegation', () => {
  test('one that ended (completed, failed, cancelled) or has not started is refused, and nothing is written', async ({
    db,
  }) => {
    for (const status of ['completed', 'failed', 'cancelled'] as const) {
      const parent = await sessionWithRun(db)
      await endRun(db, { namespaceId: NS, runId: parent.runId, status })
      const before = await attemptCount(db, parent.sessionId)
      expect(await acceptDelegations(db, [delegation(parent.sessionId, parent.runId)])).toEqual([
        { kind: 'run_not_active', status },
      ])
      expect(await attemptCount(db, parent.sessionId)).toBe(before)
    }
    // A continuation run nobody claimed yet has not started.
    const parent = await sessionWithRun(db)
    const child = await delegateFrom(db, parent)
    await endRun(db, { namespaceId: NS, runId: parent.runId, status: 'completed' })
    await finish(db, child)
    const pending = (await runsOf(db, parent.sessionId)).find(
      (r) => r.trigger_type === 'async_subagent_result',
    )
    expect(pending?.status).toBe('pending')
    const before = await attemptCount(db, parent.sessionId)
    expect(
      await acceptDelegations(db, [delegation(parent.sessionId, String(pending?.id))]),
    ).toEqual([{ kind: 'run_not_active', status: 'pending' }])
    expect(await attemptCount(db, parent.sessionId)).toBe(before)
  })
})
