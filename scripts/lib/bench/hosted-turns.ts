// The cost of a hosted turn, measured on Baton's latency processes: a hosted session's parent
// (scripted) delegates its input to one short child and ends its run; the child's result comes
// back as the session's first continuation run. A turn is the time from the parent run's start to
// that continuation run's start, both read from the session's event stream in the ledger
// (`run_started` events, written in the transactions that start the runs), so the bench's own
// polling adds nothing to it. Turns run one after another, each in a fresh session.
import { mkdir, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import type { BatonClient } from '@baton/client'
import type { Db } from '@baton/store'
import { writeHostedProfiles } from '../hosted-profiles.ts'

const PROFILE = 'bench-parent'
const CHILD = 'bench-child'

const PARENT_SCRIPT = {
  steps: [
    { kind: 'tool-calls', calls: [{ toolName: 'delegate', input: { name: CHILD, prompt: 'q' } }] },
    { kind: 'text', text: 'delegated' },
  ],
  resumeSteps: [{ kind: 'text', text: 'noted' }],
}
const CHILD_SCRIPT = { steps: [{ kind: 'text', text: 'answer' }] }

/** Writes the profiles and scripted models to a fresh directory; answers the env they need. */
export async function hostedTurnEnv(): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-bench-hosted-'))
  await mkdir(join(dir, 'scripts'))
  return writeHostedProfiles(dir, join(dir, 'scripts'), {
    parents: { [PROFILE]: PARENT_SCRIPT },
    child: { name: CHILD, description: 'Answers at once', script: CHILD_SCRIPT },
  })
}

/** How long one turn may take before the bench fails instead of measuring. */
const TURN_TIMEOUT_MS = 30_000
const POLL_MS = 10

/** Polls the session's runs until both have ended; answers their `run_started` times. */
async function turnOf(db: Db, sessionId: string): Promise<[number, number]> {
  const deadline = Date.now() + TURN_TIMEOUT_MS
  for (;;) {
    const r = await sql<{ kind: string; at: number }>`
      select kind, (extract(epoch from at) * 1000)::float8 as at from session_events
      where session_id = ${sessionId} and kind in ('run_started', 'run_ended')
      order by seq
    `.execute(db)
    const started = r.rows.filter((e) => e.kind === 'run_started').map((e) => e.at)
    const ended = r.rows.filter((e) => e.kind === 'run_ended').length
    // The parent run and its continuation run, both ended: the next turn starts on a quiet fleet.
    if (started.length >= 2 && ended >= 2) return [started[0]!, started[1]!]
    if (Date.now() > deadline)
      throw new Error(`hosted turn in ${sessionId}: ${started.length} runs started, ${ended} ended`)
    await sleep(POLL_MS)
  }
}

/** `turns` hosted turns, one after another; answers their durations in ms, ascending. */
export async function measureHostedTurns(
  client: BatonClient,
  db: Db,
  turns: number,
): Promise<number[]> {
  const durations: number[] = []
  for (let i = 0; i < turns; i += 1) {
    const { sessionId } = await client.createSession({ profile: PROFILE })
    await client.startRun(sessionId, { input: `turn ${i}` })
    const [parent, continuation] = await turnOf(db, sessionId)
    durations.push(continuation - parent)
  }
  return durations.sort((a, b) => a - b)
}
