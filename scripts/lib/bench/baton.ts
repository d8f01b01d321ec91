// Baton as the bench runs it: the real API and worker apps through `@baton/client`, on a migrated
// database with one API key, with a hosted parent's profile; after its submit-and-waits, its
// cancels, its hosted turns and the ledger audit.
import { createDb } from '@baton/store'
import { auditLedger } from '@baton/testing/ledger-audit'
import { spawnApp } from '@baton/testing/processes'
import { issueDefaultKey, prepareDatabase } from '../services.ts'
import { measureCancels } from './cancel.ts'
import { hostedTurnEnv, measureHostedTurns } from './hosted-turns.ts'
import type { HttpSystem } from './http-system.ts'
import { percentile } from './stats.ts'

export const batonSystem: HttpSystem = {
  name: 'baton',
  ledger: { table: 'attempts', finished: 'terminal', finishedAt: 'terminal_at' },

  async prepare(databaseUrl) {
    await prepareDatabase(databaseUrl, { fresh: true })
    return issueDefaultKey(databaseUrl, 'bench')
  },

  env: hostedTurnEnv,

  // Info-level logs, as Baton is deployed; no metrics endpoint, whose port the workers would share.
  spawn: (role, name, env) =>
    spawnApp(
      role,
      { ...env, LOG_LEVEL: 'info', METRICS_PORT: '0' },
      // A busy machine can take longer to start the apps than the default allows; nothing is
      // timed until every process is ready.
      { name: `baton-${name}`, outputLimit: 20_000, timeoutMs: 180_000 },
    ),

  async after({ client, databaseUrl, accepted, sequential, hostedTurns }) {
    const cancels = await measureCancels(client, Math.min(100, sequential), accepted)
    const db = createDb({ connectionString: databaseUrl, maxConnections: 1 })
    try {
      const turns = await measureHostedTurns(client, db, hostedTurns)
      const audit = await auditLedger(db, accepted)
      return {
        cancel_p50_ms: percentile(cancels, 50),
        cancel_p99_ms: percentile(cancels, 99),
        hosted_turn_p50_ms: percentile(turns, 50),
        hosted_turn_p99_ms: percentile(turns, 99),
        hosted_turns: turns.length,
        lost: audit.lost,
        duplicates: audit.duplicates,
      }
    } finally {
      await db.destroy()
    }
  },
}
