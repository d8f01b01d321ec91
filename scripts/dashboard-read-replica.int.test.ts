// DATABASE_READ_URL: the dashboard's admin reads come from a streaming standby (scripts/lib/
// pg-standby.ts) of the ledger's primary, and nothing else does. With the standby's replay paused,
// the dashboard shows the ledger as the standby last replayed it while a wait still answers the
// attempt's terminal state from the primary; with the standby stopped, waits still answer.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { createBatonClient } from '@baton/client'
import { eventually, expect, freePort, test } from '@baton/testing'
import { apiAddress, apiProcessEnv, startApp, workerProcessEnv } from '@baton/testing/processes'
import { ensurePostgres } from './lib/dev-postgres.ts'
import { startStandby } from './lib/pg-standby.ts'
import { issueDefaultKey, prepareDatabase, withDatabase } from './lib/services.ts'

const ADMIN_KEY = 'dashboard-read-replica-admin-key-0123456789'

test('the dashboard reads the standby; waits answer from the primary, paused or stopped standby alike', async ({
  track,
  redisUrl,
  queuePrefix,
}) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-read-replica-test-'))
  // A primary of the test's own: it lets its user make replication connections.
  const serverUrl = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`
  const primaryServer = (
    await ensurePostgres(serverUrl, join(dir, 'primary'), process.env, () => {})
  ).server
  if (primaryServer === undefined) throw new Error('expected a primary of the test’s own')
  track({ close: () => primaryServer.stop(), isClosed: () => primaryServer.hasExited() })
  const primaryUrl = withDatabase(serverUrl, 'baton_read_replica')
  await prepareDatabase(primaryUrl)
  const apiKey = await issueDefaultKey(primaryUrl, 'read-replica')

  const standby = await startStandby({
    primaryUrl: serverUrl,
    port: await freePort(),
    dir: join(dir, 'standby'),
  })
  let standbyStopped = false
  const stopStandby = async (): Promise<void> => {
    if (standbyStopped) return
    standbyStopped = true
    await standby.stop()
  }
  track({ close: stopStandby, isClosed: () => standbyStopped })
  const standbyUrl = standby.url('baton_read_replica')

  const services = { databaseUrl: primaryUrl, redisUrl, queuePrefix }
  const timeouts = { timeoutMs: 90_000 }
  const worker = track(await startApp('worker', workerProcessEnv(services), timeouts))
  const api = track(
    await startApp(
      'api',
      apiProcessEnv(services, { ADMIN_API_KEY: ADMIN_KEY, DATABASE_READ_URL: standbyUrl }),
      timeouts,
    ),
  )
  const baseUrl = apiAddress(api)
  const client = createBatonClient({ baseUrl, apiKey })
  const dashboardSessions = async (): Promise<string[] | undefined> => {
    const response = await fetch(`${baseUrl}/admin/api/sessions`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    })
    if (response.status !== 200) return undefined
    const body = (await response.json()) as { sessions: { sessionId: string }[] }
    return body.sessions.map((s) => s.sessionId)
  }
  const delegate = (sessionId: string) =>
    client.delegateAndWait(
      { sessionId, name: 'scripted', prompt: JSON.stringify({ output: sessionId }) },
      60_000,
    )

  // Replicated: the dashboard lists a session the primary committed.
  expect(await delegate('replicated')).toMatchObject({ status: 'terminal' })
  await eventually(
    async () => ((await dashboardSessions())?.includes('replicated') === true ? true : undefined),
    { what: 'the replicated session on the dashboard', timeoutMs: 60_000 },
  )

  // Replay paused: a wait still answers terminal (from the primary); the dashboard (the standby)
  // does not know the session yet.
  const onStandby = new pg.Client({ connectionString: standby.url('postgres') })
  await onStandby.connect()
  try {
    await onStandby.query('select pg_wal_replay_pause()')
    await eventually(
      async () => {
        const { rows } = await onStandby.query<{ state: string }>(
          'select pg_get_wal_replay_pause_state() as state',
        )
        return rows[0]?.state === 'paused' ? true : undefined
      },
      { what: 'the standby paused', timeoutMs: 30_000 },
    )
    const paused = await delegate('while-paused')
    expect(paused).toMatchObject({ status: 'terminal', stopReason: 'completed' })
    expect(await client.wait(paused.attemptId, 5_000)).toMatchObject({ status: 'terminal' })
    const listed = await dashboardSessions()
    expect(listed).toContain('replicated')
    expect(listed).not.toContain('while-paused')

    await onStandby.query('select pg_wal_replay_resume()')
    await eventually(
      async () =>
        (await dashboardSessions())?.includes('while-paused') === true ? true : undefined,
      { what: 'the session on the dashboard once replay resumed', timeoutMs: 60_000 },
    )
  } finally {
    await onStandby.end()
  }

  // The standby gone: the dashboard cannot answer, every wait still does.
  await stopStandby()
  const stopped = await delegate('standby-stopped')
  expect(stopped).toMatchObject({ status: 'terminal', stopReason: 'completed' })
  const response = await fetch(`${baseUrl}/admin/api/sessions`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  })
  expect(response.status).toBeGreaterThanOrEqual(500)

  await api.close()
  await worker.close()
  await primaryServer.stop()
  // A cluster of its own is created, copied and started: seconds, more on a busy machine.
}, 300_000)
