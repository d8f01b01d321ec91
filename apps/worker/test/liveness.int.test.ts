import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql, type RawBuilder } from 'kysely'
import { createScriptedPromptProvider } from '@baton/agents'
import { acceptDelegations, type Db } from '@baton/store'
import { describe, eventually, expect, test } from '@baton/testing'
import { auditLedger } from '@baton/testing/ledger-audit'
import { enqueue, startRuntime } from './support/worker-harness.ts'

const WORKERS = 2
const PER_WORKER = 1000
const HELD = WORKERS * PER_WORKER
const HEARTBEAT_INTERVAL_MS = 400
const OBSERVED_BEATS = 8

// The store's renewal, claim and commit statements, told apart by a fragment of their SQL. Should
// a statement's text change, its count drops to zero and the test fails rather than passing blind.
const RENEWAL = 'as held(id, generation)'
const CLAIM = `'accepted', 'running', 'claimed'`
const COMMIT = `'running', 'terminal', 'committed'`

/** Counts one worker's claim, renewal and commit statements and how many items each carried. */
function statementLog() {
  const renewals: { atMs: number; leases: number }[] = []
  const claims: number[] = []
  let commits = 0
  // Each batched statement takes its items as arrays (`unnest`): the first one's length is the
  // number of attempts the statement covered. A lone claim matches `id = $1`: no array, one attempt.
  const items = (parameters: readonly unknown[]): number =>
    (parameters.find(Array.isArray) as unknown[] | undefined)?.length ?? 1
  return {
    renewals,
    claims,
    get commits() {
      return commits
    },
    onQuery: (text: string, parameters: readonly unknown[]): void => {
      if (text.includes(RENEWAL))
        renewals.push({ atMs: performance.now(), leases: items(parameters) })
      else if (text.includes(CLAIM)) claims.push(items(parameters))
      else if (text.includes(COMMIT)) commits += 1
    },
  }
}

/** Every attempt's status, owner and lease as the ledger has them now. */
async function leases(db: Db) {
  const result = await sql<{
    id: string
    status: string
    owner_id: string | null
    lease_ms: number | null
    live: boolean | null
  }>`
    select id, status, owner_id,
      (extract(epoch from lease_expires_at) * 1000)::float8 as lease_ms,
      lease_expires_at > now() as live
    from attempts
  `.execute(db)
  return new Map(result.rows.map((r) => [r.id, r]))
}

async function countWhere(db: Db, condition: RawBuilder<unknown>): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int as n from attempts where ${condition}
  `.execute(db)
  return result.rows[0]?.n ?? 0
}

describe('batched liveness across a fleet', () => {
  test(
    `${WORKERS} workers holding ${PER_WORKER} leases each renew them with one statement per interval, and claim and commit in batches`,
    { timeout: 120_000 },
    async ({ services: ctx, db }) => {
      const env = {
        WORKER_CONCURRENCY: String(PER_WORKER),
        HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
        // Starting 2000 children on two cores can hold a beat back for a second or more; the
        // lease outlasts that with room, so only a broken heartbeat loses one.
        LEASE_TTL_MS: String(HEARTBEAT_INTERVAL_MS * 10),
        // The reconciler keeps looking for expired leases (it would record process loss), but
        // does not re-enqueue attempts merely waiting for a free slot.
        RECONCILE_INTERVAL_MS: '1000',
        REQUEUE_AFTER_MS: '600000',
      }
      const logs = Array.from({ length: WORKERS }, statementLog)
      const workers = await Promise.all(
        logs.map((log, i) =>
          startRuntime(
            ctx,
            createScriptedPromptProvider(),
            { ...env, WORKER_ID: `liveness-${i}` },
            { onQuery: log.onQuery },
          ),
        ),
      )

      // Children that run until they are aborted; exactly as many as the fleet has slots.
      const inputs = Array.from({ length: HELD }, () => ({
        namespaceId: 'default',
        sessionId: 'liveness',
        name: 'scripted',
        prompt: [{ type: 'text', text: '{"hang":true}' }],
        metadata: {},
        attemptId: randomUUID(),
        newAgentId: randomUUID(),
      }))
      await acceptDelegations(db, inputs)
      await enqueue(ctx, ...inputs.map((i) => i.attemptId))
      await eventually(
        async () => ((await countWhere(db, sql`status = 'running'`)) === HELD ? true : undefined),
        { timeoutMs: 40_000, intervalMs: 100, what: `all ${HELD} children to be running` },
      )

      // Every worker claimed its full share, in few statements.
      for (const [i, log] of logs.entries()) {
        const owned = await countWhere(db, sql`owner_id = ${workers[i]?.workerId ?? ''}`)
        expect(owned).toBe(PER_WORKER)
        // The counted statements are the ones that claimed (a redelivered job may add a retry).
        expect(log.claims.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(PER_WORKER)
      }
      // Measured: 10 statements (batches of up to 500) for 2000 claims, also on a loaded machine.
      const claimStatements = logs.reduce((n, log) => n + log.claims.length, 0)
      expect(claimStatements, `claim statements for ${HELD} claims`).toBeLessThan(HELD / 20)

      // Observe the fleet holding every lease for several heartbeat intervals, from the moment
      // every keeper has renewed all of its leases at once (the claims' own load is over by then).
      await eventually(
        async () =>
          logs.every((log) => log.renewals.some((r) => r.leases === PER_WORKER)) ? true : undefined,
        { timeoutMs: 20_000, what: 'every worker to renew all of its leases' },
      )
      const before = await leases(db)
      const windowStart = performance.now()
      await sleep(OBSERVED_BEATS * HEARTBEAT_INTERVAL_MS)
      const windowEnd = performance.now()
      const after = await leases(db)

      // 1. Every lease stayed live and moved forward; no child was lost.
      expect(after.size).toBe(HELD)
      for (const [id, now] of after) {
        const then = before.get(id)
        expect(now).toMatchObject({ status: 'running', live: true })
        expect(now.owner_id).toBe(then?.owner_id)
        expect(now.lease_ms).toBeGreaterThan(then?.lease_ms ?? Infinity)
      }
      const lost = await sql<{ n: number }>`
        select count(*)::int as n from attempt_transitions where event = 'process_lost'
      `.execute(db)
      expect(lost.rows[0]?.n).toBe(0)

      // 2. At most one renewal statement per worker per interval (two more for the window's
      // edges), each covering all of the worker's leases. A busy machine may fire a heartbeat
      // late, never more often, so fewer is fine; the leases above show none ran out.
      const intervals = (windowEnd - windowStart) / HEARTBEAT_INTERVAL_MS
      for (const log of logs) {
        const inWindow = log.renewals.filter((r) => r.atMs >= windowStart && r.atMs <= windowEnd)
        const what = `${inWindow.length} renewal statements in ${intervals.toFixed(1)} intervals`
        expect(inWindow.length, what).toBeGreaterThanOrEqual(1)
        expect(inWindow.length, what).toBeLessThanOrEqual(intervals + 2)
        for (const renewal of inWindow) expect(renewal.leases).toBe(PER_WORKER)
      }

      // 3. A checked shutdown aborts every child; the workers commit `aborted` in batches.
      await Promise.all(workers.map((w) => w.shutdownChecked(60_000)))
      expect(
        await countWhere(
          db,
          sql`status = 'terminal' and stop_reason = 'aborted' and failure_category = 'shutdown'`,
        ),
      ).toBe(HELD)
      const trails = await sql<{ trail: string; n: number }>`
        select trail, count(*)::int as n from (
          select string_agg(event, ',' order by id) as trail
          from attempt_transitions group by attempt_id
        ) t group by trail
      `.execute(db)
      expect(trails.rows).toEqual([{ trail: 'accepted,claimed,committed', n: HELD }])
      expect(await auditLedger(db, [...before.keys()])).toMatchObject({
        lost: 0,
        stuck: 0,
        duplicates: 0,
      })
      // Measured: 4 statements for 2000 commits.
      const commitStatements = logs.reduce((n, log) => n + log.commits, 0)
      expect(commitStatements).toBeGreaterThan(0)
      expect(commitStatements, `commit statements for ${HELD} commits`).toBeLessThan(HELD / 20)
    },
  )
})
