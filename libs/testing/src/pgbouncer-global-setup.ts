import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import setup from './global-setup.ts'
import { startPgBouncer } from './pgbouncer.ts'
import { freePort } from './prometheus.ts'

/**
 * The integration project's setup, and a PgBouncer in transaction mode in front of its Postgres:
 * the `integration-pgbouncer` project's apps reach their file's database through it
 * (`pooledDatabaseUrl`), while creating, cloning and migrating databases stays direct. Without
 * `pgbouncer` installed the project fails here, naming the package.
 */
export default async function setupPgBouncer(project: TestProject): Promise<() => Promise<void>> {
  const teardown = await setup(project)
  try {
    const direct = new URL(project.getProvidedContext().databaseUrl)
    const bouncer = await startPgBouncer({
      port: await freePort(),
      upstream: { host: direct.hostname, port: Number(direct.port || 5432) },
      dir: mkdtempSync(join(tmpdir(), 'baton-pgbouncer-')),
    })
    project.provide('pooledDatabaseUrl', bouncer.url('postgres'))
    return async () => {
      await bouncer.stop()
      await teardown()
    }
  } catch (error) {
    await teardown()
    throw error
  }
}
