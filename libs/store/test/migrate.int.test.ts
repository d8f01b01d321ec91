import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { continuationDigest, resultDigest } from '@baton/contracts'
import {
  describe,
  expect,
  freePort,
  ledgerCopiesOf,
  startPgBouncer,
  test,
  withEmptyDatabase,
} from '@baton/testing'
import { expireArtifacts } from '../src/artifacts/expire-artifacts.ts'
import { artifactIdFor, buildTerminalProjection } from '../src/attempts/terminal-record.ts'
import { admitContinuations, durableResultInput } from '../src/continuations/admit-continuation.ts'
import { claimContinuation } from '../src/continuations/claim-continuation.ts'
import { getContinuation } from '../src/continuations/get-continuation.ts'
import { createDb, type Db } from '../src/db.ts'
import { migrateTo, migrateToLatest, pendingMigrations } from '../src/migrate.ts'

describe('migrations', () => {
  test('migrate from zero creates the ledger, and re-running is a no-op', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const db = createDb({ connectionString: url, maxConnections: 2 })
      try {
        expect(await pendingMigrations(db)).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
          '0005-failure-categories',
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
          '0020-artifact-chunks',
          '0021-namespace-limits',
          '0030-webhooks',
          '0040-hosted-sessions',
          '0041-session-events',
          '0042-nested-delegations',
          '0043-attempt-usage',
          '0050-ledger-retention',
          '0051-heap-only-renewals',
          '0052-retention-key-indexes',
          '0055-planned-webhook-enqueue',
          '0070-distribution-key',
          '0080-attempt-depth',
          '0085-hosted-run-idempotency',
        ])
        expect((await migrateToLatest(db)).applied).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
          '0005-failure-categories',
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
          '0020-artifact-chunks',
          '0021-namespace-limits',
          '0030-webhooks',
          '0040-hosted-sessions',
          '0041-session-events',
          '0042-nested-delegations',
          '0043-attempt-usage',
          '0050-ledger-retention',
          '0051-heap-only-renewals',
          '0052-retention-key-indexes',
          '0055-planned-webhook-enqueue',
          '0070-distribution-key',
          '0080-attempt-depth',
          '0085-hosted-run-idempotency',
        ])
        const tables = await sql<{ table_name: string }>`
          select table_name from information_schema.tables where table_schema = 'public' order by 1
        `.execute(db)
        expect(tables.rows.map((r) => r.table_name)).toEqual(
          expect.arrayContaining([
            'namespaces',
            'sessions',
            'agents',
            'attempts',
            'attempt_transitions',
            'agent_context_events',
            'runs',
            'continuations',
            'artifacts',
            'namespace_usage',
          ]),
        )
        // Autovacuum analyzes the attempts after every 5,000 changed rows, whatever the size of
        // the table (see 0010-attempt-statistics.ts), and its pages keep room for renewals to
        // update running attempts in place (0051-heap-only-renewals.ts).
        const options = await sql<{ reloptions: string[] | null }>`
          select reloptions from pg_class where oid = 'attempts'::regclass
        `.execute(db)
        expect(options.rows[0]?.reloptions).toEqual([
          'autovacuum_analyze_scale_factor=0',
          'autovacuum_analyze_threshold=5000',
          'fillfactor=50',
        ])
        // The audit names its attempt without a foreign key (see 0011-transition-audit.ts).
        const keys = await sql<{ n: number }>`
          select count(*)::int as n from pg_constraint
          where conrelid = 'attempt_transitions'::regclass and contype = 'f'
        `.execute(db)
        expect(keys.rows[0]?.n).toBe(0)
        expect((await migrateToLatest(db)).applied).toEqual([])
        expect(await pendingMigrations(db)).toEqual([])
      } finally {
        await db.destroy()
      }
    })
  })

  test('two migrators running at once both succeed and apply each migration once', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const a = createDb({ connectionString: url, maxConnections: 2 })
      const b = createDb({ connectionString: url, maxConnections: 2 })
      try {
        const [ra, rb] = await Promise.all([migrateToLatest(a), migrateToLatest(b)])
        expect([...ra.applied, ...rb.applied]).toEqual([
          '0001-ledger',
          '0002-steering',
          '0003-idempotency',
          '0004-context',
          '0005-failure-categories',
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
          '0020-artifact-chunks',
          '0021-namespace-limits',
          '0030-webhooks',
          '0040-hosted-sessions',
          '0041-session-events',
          '0042-nested-delegations',
          '0043-attempt-usage',
          '0050-ledger-retention',
          '0051-heap-only-renewals',
          '0052-retention-key-indexes',
          '0055-planned-webhook-enqueue',
          '0070-distribution-key',
          '0080-attempt-depth',
          '0085-hosted-run-idempotency',
        ])
        const executed = await sql<{
          n: number
        }>`select count(*)::int as n from kysely_migration`.execute(a)
        expect(executed.rows[0]?.n).toBe(ra.applied.length + rb.applied.length)
      } finally {
        await a.destroy()
        await b.destroy()
      }
    })
  })

  test('migrators running at once through PgBouncer in transaction mode apply each migration once', async ({
    databaseUrl,
    track,
  }) => {
    const direct = new URL(databaseUrl)
    const bouncer = track(
      await startPgBouncer({
        port: await freePort(),
        upstream: { host: direct.hostname, port: Number(direct.port || 5432) },
        dir: mkdtempSync(join(tmpdir(), 'baton-pgbouncer-')),
        poolSize: 3,
      }),
    )
    await withEmptyDatabase(databaseUrl, async (url) => {
      const through = bouncer.url(new URL(url).pathname.slice(1))
      // Three processes' pools on fewer server connections than they have clients, so that any
      // lock kept past a transaction would be met again by another client.
      const pool = () =>
        createDb({ connectionString: through, maxConnections: 2, preparedStatements: false })
      const dbs = [pool(), pool(), pool()] as const
      try {
        const all = await pendingMigrations(dbs[0])
        const reports = await Promise.all(dbs.map((db) => migrateToLatest(db)))
        expect(reports.flatMap((r) => r.applied).sort()).toEqual(all)
        const executed = await sql<{
          n: number
        }>`select count(*)::int as n from kysely_migration`.execute(dbs[0])
        expect(executed.rows[0]?.n).toBe(all.length)
        expect(await pendingMigrations(dbs[1])).toEqual([])
      } finally {
        for (const db of dbs) await db.destroy()
      }
    })
    await bouncer.stop()
  })

  test('0080 gives existing attempts their depth: a chain by parent attempt, the parent runs 0', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const db = createDb({ connectionString: url, maxConnections: 2 })
      try {
        await migrateTo(db, '0070-distribution-key')
        await sql`insert into sessions (id, namespace_id) values ('s', 'default')`.execute(db)
        const ids = {
          run: randomUUID(),
          a: randomUUID(),
          b: randomUUID(),
          c: randomUUID(),
          d: randomUUID(),
        }
        // Inserted deepest first: the backfill must not depend on the order rows were written.
        const rows: [string, string, string | null][] = [
          [ids.c, 'helper', ids.b],
          [ids.b, 'helper', ids.a],
          [ids.d, 'helper', ids.run],
          [ids.a, 'helper', null],
          [ids.run, 'profile:lead', null],
        ]
        for (const [id, name, parent] of rows) {
          await sql`
            with ag as (insert into agents (id, namespace_id, session_id, name)
                        values (${id}, 'default', 's', ${name}))
            insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, status,
                                  parent_attempt_id)
            values (${id}, 'default', ${id}, 's', ${name}, '[]', 'accepted', ${parent})
          `.execute(db)
        }
        expect((await migrateTo(db, '0080-attempt-depth')).applied).toEqual(['0080-attempt-depth'])
        const depths = await sql<{ id: string; depth: number | null }>`
          select id, depth from attempts`.execute(db)
        expect(Object.fromEntries(depths.rows.map((r) => [r.id, r.depth]))).toEqual({
          [ids.run]: 0,
          [ids.a]: null,
          [ids.b]: 2,
          [ids.c]: 3,
          [ids.d]: 1,
        })
      } finally {
        await db.destroy()
      }
    })
  })

  test('0005 rewrites stored failure categories into the one vocabulary, and a rerun changes nothing', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const db = createDb({ connectionString: url, maxConnections: 2 })
      try {
        await migrateTo(db, '0004-context')
        // What earlier versions could store: old spellings, known values, a provider's free text.
        const stored: Record<string, string | null> = {
          refused: 'refusal',
          aborted: 'cancelled',
          cancelled: 'cancelled',
          max_tokens: 'max_tokens',
          process_lost: 'process_lost',
          structured_output_invalid: 'structured_output_invalid',
          'tool exploded: /srv/secret': 'provider_fault',
          ['x'.repeat(5000)]: 'provider_fault',
        }
        const rows = [...Object.keys(stored), null].map((category) => ({
          id: randomUUID(),
          category,
        }))
        await sql`
          insert into sessions (id, namespace_id) values ('s', 'default');
        `.execute(db)
        for (const row of rows) {
          const agentId = randomUUID()
          await sql`insert into agents (id, session_id, name) values (${agentId}, 's', 'x')`.execute(
            db,
          )
          await sql`
            insert into attempts (id, agent_id, session_id, name, prompt, status, stop_reason,
                                  output_digest, output_bytes, fingerprint, terminal_at,
                                  failure_category)
            values (${row.id}, ${agentId}, 's', 'x', '[]', 'terminal', 'error', 'd', 0, 'f', now(),
                    ${row.category})
          `.execute(db)
        }
        const read = async () => {
          const result = await sql<{ id: string; failure_category: string | null }>`
            select id, failure_category from attempts
          `.execute(db)
          return new Map(result.rows.map((r) => [r.id, r.failure_category]))
        }

        expect((await migrateTo(db, '0005-failure-categories')).applied).toEqual([
          '0005-failure-categories',
        ])
        const after = await read()
        for (const row of rows)
          expect(after.get(row.id)).toBe(row.category === null ? null : stored[row.category])

        // Idempotent: running the statement again over normalised rows changes nothing.
        await sql`delete from kysely_migration where name = '0005-failure-categories'`.execute(db)
        expect((await migrateTo(db, '0005-failure-categories')).applied).toEqual([
          '0005-failure-categories',
        ])
        expect(await read()).toEqual(after)

        // 0006 keeps every existing row in the namespace it was written in.
        expect((await migrateToLatest(db)).applied).toEqual([
          '0006-namespaces',
          '0007-continuations',
          '0008-artifacts',
          '0009-heartbeats',
          '0010-attempt-statistics',
          '0011-transition-audit',
          '0012-terminal-time',
          '0013-continuation-content-by-reference',
          '0014-run-leases',
          '0015-continuation-indexes',
          '0020-artifact-chunks',
          '0021-namespace-limits',
          '0030-webhooks',
          '0040-hosted-sessions',
          '0041-session-events',
          '0042-nested-delegations',
          '0043-attempt-usage',
          '0050-ledger-retention',
          '0051-heap-only-renewals',
          '0052-retention-key-indexes',
          '0055-planned-webhook-enqueue',
          '0070-distribution-key',
          '0080-attempt-depth',
          '0085-hosted-run-idempotency',
        ])
        const owners = await sql<{ namespace_id: string }>`
          select distinct namespace_id from attempts
          union select distinct namespace_id from agents
        `.execute(db)
        expect(owners.rows).toEqual([{ namespace_id: 'default' }])
      } finally {
        await db.destroy()
      }
    })
  })
})

describe('0013: continuations admitted with their content in the input', () => {
  test('are rewritten to the reference form with their receipts kept byte for byte; a delivery restores the admitted input while the content lasts, and after expiry no copy of it is left anywhere', async ({
    databaseUrl,
  }) => {
    await withEmptyDatabase(databaseUrl, async (url) => {
      const db = createDb({ connectionString: url, maxConnections: 2 })
      try {
        await migrateTo(db, '0012-terminal-time')
        const legacy = {
          pending: await legacyContinuation(db, 'pending'),
          delivered: await legacyContinuation(db, 'delivered'),
          lateClaim: await legacyContinuation(db, 'late'),
        }
        for (const row of Object.values(legacy)) {
          expect(row.input).toContain('"base64":')
          // The scan finds the copy the old admission made, next to the artifact's own.
          expect(await ledgerCopiesOf(db, row.content)).toEqual([
            'artifacts.content',
            'continuations.input',
          ])
        }

        await migrateToLatest(db)
        for (const row of Object.values(legacy)) {
          const stored = await getContinuation(db, NS, { attemptId: row.attemptId })
          expect(stored?.receipt).toBe(row.receipt)
          expect(stored?.inputDigest).toBe(row.inputDigest)
          expect(stored?.input).toBe(await durableResultInput(db, row.attemptId))
          expect(JSON.parse(stored?.input ?? '').result.content).toEqual({
            artifactId: artifactIdFor(row.attemptId),
            bytes: row.content.length,
            digest: resultDigest(row.content),
            kind: 'artifact',
          })
          expect(await admitContinuations(db, [row.attemptId])).toEqual([row.receipt])
          expect(await ledgerCopiesOf(db, row.content)).toEqual(['artifact_chunks.content'])
        }

        // Delivered while the content lasts: the input the receipt binds, restored exactly.
        const claim = await claimContinuation(db, {
          namespaceId: NS,
          sessionId: legacy.pending.sessionId,
          claimToken: 'host',
          leaseMs: 60_000,
        })
        expect(claim?.input).toBe(legacy.pending.input)
        expect(continuationDigest(claim?.input ?? '')).toBe(legacy.pending.inputDigest)
        expect(claim?.content).toMatchObject({
          kind: 'artifact',
          text: legacy.pending.content.toString('utf8'),
        })

        // Two hours pass for the artifacts: their one-hour retention ends.
        await sql`
          update artifacts set created_at = created_at - interval '2 hours',
                               expires_at = expires_at - interval '2 hours'
        `.execute(db)
        expect((await expireArtifacts(db, { limit: 10 })).expired).toBe(3)
        for (const row of Object.values(legacy))
          expect(await ledgerCopiesOf(db, row.content)).toEqual([])
        // Past expiry only the reference and the summary remain (the receipt, as admitted,
        // binds an input that held the content, which no longer exists anywhere).
        const late = await claimContinuation(db, {
          namespaceId: NS,
          sessionId: legacy.lateClaim.sessionId,
          claimToken: 'host',
          leaseMs: 60_000,
        })
        expect(late?.receipt).toBe(legacy.lateClaim.receipt)
        expect(late?.input).toBe(await durableResultInput(db, legacy.lateClaim.attemptId))
        expect(late?.content).toEqual({
          kind: 'expired',
          artifactId: artifactIdFor(legacy.lateClaim.attemptId),
          bytes: legacy.lateClaim.content.length,
          digest: resultDigest(legacy.lateClaim.content),
        })
      } finally {
        await db.destroy()
      }
    })
  })
})

const NS = 'default'

/**
 * A result with an artifact admitted as a continuation by the schema of 0012, whose admission
 * copied the content (base64) into the input: written the way a worker's commit wrote it then.
 */
async function legacyContinuation(db: Db, kind: 'pending' | 'delivered' | 'late') {
  const sessionId = `legacy-${kind}`
  const agentId = randomUUID()
  const runId = randomUUID()
  const attemptId = randomUUID()
  for (const statement of [
    sql`insert into sessions (namespace_id, id) values (${NS}, ${sessionId})`,
    sql`insert into agents (id, namespace_id, session_id, name)
        values (${agentId}, ${NS}, ${sessionId}, 'x')`,
    sql`insert into runs (id, namespace_id, session_id, trigger_type, status, settled_at)
        values (${runId}, ${NS}, ${sessionId}, 'user', 'completed', now())`,
    sql`insert into attempts (id, namespace_id, agent_id, session_id, name, prompt, metadata,
                              status, owner_id, owner_generation, lease_expires_at, parent_run_id)
        values (${attemptId}, ${NS}, ${agentId}, ${sessionId}, 'x', '"p"', '{"traceId":"t"}',
                'running', 'w', 1, now() + interval '1 minute', ${runId})`,
  ])
    await statement.execute(db)
  const output = `${kind} output ${randomUUID()} `.repeat(20)
  const built = buildTerminalProjection(
    attemptId,
    1,
    { stopReason: 'completed', output, failureCategory: null },
    { inlineBytes: 16, retentionMs: 3_600_000, traceId: 't' },
  )
  const { projection, fingerprint, content } = built
  if (content === undefined || projection.artifact === undefined) throw new Error('no artifact')
  await db.transaction().execute(async (trx) => {
    await sql`
      insert into artifacts (id, namespace_id, attempt_id, content, preview, bytes, digest, expires_at)
      values (${projection.artifact?.artifactId}, ${NS}, ${attemptId}, ${content},
              ${projection.outputPreview}, ${content.length}, ${projection.outputDigest},
              now() + interval '3600000 milliseconds')
    `.execute(trx)
    await sql`
      update attempts set status = 'terminal', stop_reason = 'completed',
        output_preview = ${projection.outputPreview}, output_truncated = true,
        output_bytes = ${projection.outputBytes}, output_digest = ${projection.outputDigest},
        fingerprint = ${fingerprint}, artifact_id = ${projection.artifact?.artifactId},
        terminal_at = now(), lease_expires_at = null
      where id = ${attemptId}
    `.execute(trx)
  })
  if (kind === 'delivered') {
    await sql`
      update runs set status = 'completed', settled_at = now() where cause_attempt_id = ${attemptId}
    `.execute(db)
    await sql`
      update continuations set state = 'delivered', delivered_at = now()
      where attempt_id = ${attemptId}
    `.execute(db)
  }
  const stored = await sql<{ input: string; input_digest: string; receipt: string }>`
    select input, input_digest, receipt from continuations where attempt_id = ${attemptId}
  `.execute(db)
  const row = stored.rows[0]
  if (row === undefined) throw new Error('nothing admitted')
  return {
    sessionId,
    attemptId,
    content,
    input: row.input,
    inputDigest: row.input_digest,
    receipt: row.receipt,
  }
}
