import { sql } from 'kysely'
import { createLogger } from '@baton/observability'
import type { Db } from '@baton/store'
import { describe, eventually, expect, startServiceProcess, test } from '@baton/testing'
import { composeApi } from './compose.ts'
import { loadConfig } from './config.ts'

const quiet = createLogger({ service: 'test', level: 'silent' })

function env(
  ctx: { databaseUrl: string; redisUrl: string; queuePrefix: string },
  extra: Record<string, string> = {},
) {
  return {
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    QUEUE_PREFIX: ctx.queuePrefix,
    LEASE_TTL_MS: '1500',
    HEARTBEAT_INTERVAL_MS: '300',
    RECONCILE_INTERVAL_MS: '200',
    REQUEUE_AFTER_MS: '500',
    ...extra,
  }
}

async function events(db: Db, attemptId: string): Promise<string[]> {
  const r = await sql<{ event: string }>`
    select event from attempt_transitions where attempt_id = ${attemptId} order by id
  `.execute(db)
  return r.rows.map((x) => x.event)
}

describe('faults against real processes', () => {
  test('a worker whose event loop stalls past its lease: process loss is recorded, the stale owner writes nothing', async ({
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
    db,
  }) => {
    const api = track(
      await composeApi(
        loadConfig({ ...env({ databaseUrl, redisUrl, queuePrefix }), LOG_LEVEL: 'silent' }),
        quiet,
      ),
    )
    const base = await api.app.listen({ host: '127.0.0.1', port: 0 })
    const stalled = track(
      await startServiceProcess('worker', env({ databaseUrl, redisUrl, queuePrefix })),
    )
    const response = await fetch(`${base}/v1/sessions/stall/delegations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'scripted', prompt: '{"output":"late","delayMs":2500}' }),
    })
    const { attemptId } = (await response.json()) as { attemptId: string }
    await eventually(async () =>
      (await events(db, attemptId)).includes('claimed') ? true : undefined,
    )
    // Freeze the whole process (event loop, timers, heartbeats) for longer than its lease.
    stalled.kill('SIGSTOP')
    const survivor = track(
      await startServiceProcess('worker', env({ databaseUrl, redisUrl, queuePrefix })),
    )
    const view = await fetch(`${base}/v1/attempts/${attemptId}/wait?timeoutMs=10000`).then((r) =>
      r.json(),
    )
    expect(view).toMatchObject({
      status: 'terminal',
      stopReason: 'error',
      failureCategory: 'process_lost',
    })
    stalled.kill('SIGCONT')
    // Past the child's own delay: the revived owner learns of its loss and must not commit.
    await new Promise((r) => setTimeout(r, 3000))
    expect(await events(db, attemptId)).toEqual(['accepted', 'claimed', 'process_lost'])
    expect(stalled.output()).toContain('lease lost')
    await stalled.close()
    await survivor.close()
    await api.close()
  })

  test('Postgres backends terminated mid-run: owners keep their leases and the commit still lands', async ({
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
    db,
  }) => {
    const api = track(
      await composeApi(
        loadConfig({ ...env({ databaseUrl, redisUrl, queuePrefix }), LOG_LEVEL: 'silent' }),
        quiet,
      ),
    )
    const base = await api.app.listen({ host: '127.0.0.1', port: 0 })
    const worker = track(
      await startServiceProcess('worker', env({ databaseUrl, redisUrl, queuePrefix })),
    )
    const response = await fetch(`${base}/v1/sessions/pgkill/delegations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'scripted', prompt: '{"output":"survived","delayMs":1200}' }),
    })
    const { attemptId } = (await response.json()) as { attemptId: string }
    await eventually(async () =>
      (await events(db, attemptId)).includes('claimed') ? true : undefined,
    )
    const killed = await sql<{ n: number }>`
      select count(*)::int as n from (
        select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
      ) k
    `.execute(db)
    expect(killed.rows[0]?.n).toBeGreaterThan(0)
    const view = await fetch(`${base}/v1/attempts/${attemptId}/wait?timeoutMs=10000`).then((r) =>
      r.json(),
    )
    expect(view).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'survived' })
    expect(await events(db, attemptId)).toEqual(['accepted', 'claimed', 'committed'])
    await worker.close()
    await api.close()
  })
})
