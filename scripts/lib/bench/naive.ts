// The hand-rolled service as the bench runs it (naive-service.ts): its API and worker processes on
// a database with its one table, driven by the same client and load as Baton.
import { spawnEntry } from '@baton/testing/processes'
import { createDatabaseWithSchema } from '../services.ts'
import { UNCHECKED_KEY } from './http-load.ts'
import type { HttpSystem } from './http-system.ts'
import { NAIVE_READY_MESSAGES, NAIVE_SCHEMA_SQL } from './naive-shared.ts'

export const naiveSystem: HttpSystem = {
  name: 'naive',
  ledger: { table: 'delegations', finished: 'completed', finishedAt: 'finished_at' },

  async prepare(databaseUrl) {
    await createDatabaseWithSchema(databaseUrl, NAIVE_SCHEMA_SQL)
    return UNCHECKED_KEY
  },

  spawn: (role, name, env) =>
    spawnEntry(
      'scripts/lib/bench/naive-service.ts',
      { ...env, NAIVE_ROLE: role },
      {
        name: `naive-${name}`,
        readyMessage: NAIVE_READY_MESSAGES[role],
        outputLimit: 20_000,
      },
    ),
}
