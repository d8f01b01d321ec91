// Why `DB_PREPARED_STATEMENTS=false` exists: PgBouncer in transaction mode (before 1.21, or with
// `max_prepared_statements = 0`, as the harness runs it on any version) hands each transaction the
// next free server connection, which knows nothing of the names other clients prepared on it.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import {
  describe,
  expect,
  freePort,
  startPgBouncer,
  test,
  type Closeable,
  type PgBouncer,
} from '@baton/testing'
import { getAttempt } from '../src/index.ts'
import { createDb } from '../src/db.ts'

/** The file's database through a PgBouncer of one server connection, which every client shares. */
async function behindOneServerConnection(
  databaseUrl: string,
  track: <T extends Closeable>(resource: T) => T,
): Promise<{ url: string; bouncer: PgBouncer }> {
  const direct = new URL(databaseUrl)
  const bouncer = track(
    await startPgBouncer({
      port: await freePort(),
      upstream: { host: direct.hostname, port: Number(direct.port || 5432) },
      dir: mkdtempSync(join(tmpdir(), 'baton-pgbouncer-')),
      poolSize: 1,
    }),
  )
  return { url: bouncer.url(direct.pathname.slice(1)), bouncer }
}

describe('the ledger behind PgBouncer in transaction mode', () => {
  test('two processes with named statements collide on a shared server connection; unnamed they do not', async ({
    databaseUrl,
    track,
  }) => {
    const { url, bouncer } = await behindOneServerConnection(databaseUrl, track)
    const read = async (preparedStatements: boolean): Promise<unknown[]> => {
      // Two pools, as two processes have: each names its first statement text `baton_1`.
      const a = createDb({ connectionString: url, maxConnections: 1, preparedStatements })
      const b = createDb({ connectionString: url, maxConnections: 1, preparedStatements })
      try {
        const results: unknown[] = []
        for (const db of [a, b]) {
          results.push(await getAttempt(db, randomUUID()).catch((error: unknown) => error))
        }
        return results
      } finally {
        await a.destroy()
        await b.destroy()
      }
    }
    // The second pool parses `baton_1_0` on the server connection where the first left it.
    const [first, second] = await read(true)
    expect(first).toBeUndefined()
    expect(second).toMatchObject({ code: '42P05' }) // duplicate_prepared_statement
    expect(await read(false)).toEqual([undefined, undefined])
    await bouncer.stop()
  })
})
