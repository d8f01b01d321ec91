// The demo hosted parent `npm run up` loads (examples/hosted), as scenario tests run it: one input
// makes the `demo` parent delegate to two researchers and end its turn; each answer comes back as
// a continuation run of the session.
import { join } from 'node:path'
import { sql } from 'kysely'
import type { BatonClient } from '@baton/client'
import type { Db } from '@baton/store'
import { eventually } from './eventually.ts'
import { REPO_ROOT } from './processes.ts'

/** The environment of API and workers that loads the demo profiles and their scripted models. */
export const DEMO_PROFILES_ENV: Readonly<Record<string, string>> = {
  PROFILES_FILE: join(REPO_ROOT, 'examples', 'hosted', 'profiles.toml'),
  SCRIPTED_MODELS_DIR: join(REPO_ROOT, 'examples', 'hosted', 'scripts'),
}

/** Waits until every run of the demo session `sessionId` has ended, and there are at least 3. */
export async function untilDemoRunsEnded(
  db: Db,
  sessionId: string,
  timeoutMs = 60_000,
): Promise<void> {
  await eventually(
    async () => {
      const { rows } = await sql<{ ended: number; open: number }>`
        select count(*) filter (where status not in ('pending', 'active'))::int as ended,
               count(*) filter (where status in ('pending', 'active'))::int as open
        from runs where session_id = ${sessionId}`.execute(db)
      const [row] = rows
      return row !== undefined && row.ended >= 3 && row.open === 0 ? true : undefined
    },
    { timeoutMs, what: `the demo session ${sessionId}: its run and both continuations ended` },
  )
}

/**
 * A demo session of the default namespace run to its end: the user run (which delegates two
 * researchers) and the two continuation runs their results caused.
 */
export async function runDemoSession(
  client: BatonClient,
  db: Db,
  input = 'Compare two durable queues',
): Promise<{ readonly sessionId: string; readonly userRunId: string }> {
  const session = await client.createSession({ profile: 'demo' })
  const run = await client.startRun(session.sessionId, { input, wait: 30_000 })
  if (run.status !== 'completed') throw new Error(`the demo's run ended ${run.status}`)
  await untilDemoRunsEnded(db, session.sessionId)
  return { sessionId: session.sessionId, userRunId: run.runId }
}
