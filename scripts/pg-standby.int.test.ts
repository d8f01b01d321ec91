// A streaming standby (scripts/lib/pg-standby.ts) of a primary of the test's own: what the primary
// commits, the standby serves read-only.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { eventually, expect, freePort, test } from '@baton/testing'
import { ensurePostgres } from './lib/dev-postgres.ts'
import { startStandby } from './lib/pg-standby.ts'

test('a standby replays what the primary commits and refuses writes', async ({ track }) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-standby-test-'))
  const primaryUrl = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`
  // Nothing answers on a fresh port: up's helper starts a cluster of its own there.
  const primary = await ensurePostgres(primaryUrl, join(dir, 'primary'), process.env, () => {})
  const server = primary.server
  if (server === undefined) throw new Error('expected a primary of the test’s own')
  track({ close: () => server.stop(), isClosed: () => server.hasExited() })

  const standby = await startStandby({ primaryUrl, port: await freePort(), dir: join(dir, 'r') })
  let stopped = false
  track({
    close: async () => {
      stopped = true
      await standby.stop()
    },
    isClosed: () => stopped,
  })

  const onPrimary = new pg.Client({ connectionString: primaryUrl })
  const onStandby = new pg.Client({ connectionString: standby.url('postgres') })
  await onPrimary.connect()
  await onStandby.connect()
  try {
    expect((await onStandby.query('select pg_is_in_recovery() as r')).rows[0]).toEqual({ r: true })
    await onPrimary.query('create table replicated (id int primary key)')
    await onPrimary.query('insert into replicated values (1), (2)')
    const ids = await eventually(
      async () => {
        const found = await onStandby
          .query<{ id: number }>('select id from replicated order by id')
          .catch(() => undefined)
        return found?.rows.length === 2 ? found.rows.map((r) => r.id) : undefined
      },
      { what: 'the rows on the standby' },
    )
    expect(ids).toEqual([1, 2])
    await expect(onStandby.query('insert into replicated values (3)')).rejects.toMatchObject({
      code: '25006', // read_only_sql_transaction
    })
  } finally {
    await onPrimary.end()
    await onStandby.end()
  }
  await standby.stop()
  stopped = true
  await server.stop()
  // A cluster of its own is created, copied and started twice: seconds, more on a busy machine.
}, 180_000)
