// `baton sessions create --profile` and `baton run --follow` on the demo profile `npm run up`
// loads, against a real API and worker.
import { join } from 'node:path'
import type { HostedRunView, SessionEvent, SessionView } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'
import { REPO_ROOT } from '@baton/testing/processes'
import { baton, KEYS, SLOW_CLI } from './support/cli-harness.ts'

const DEMO_ENV = {
  PROFILES_FILE: join(REPO_ROOT, 'examples', 'hosted', 'profiles.toml'),
  SCRIPTED_MODELS_DIR: join(REPO_ROOT, 'examples', 'hosted', 'scripts'),
}

describe('baton on a hosted parent', () => {
  test(
    'sessions create --profile, then run --follow streams the run: its records and its two children attributed, ending with the run',
    SLOW_CLI,
    async ({ baton: start }) => {
      const stack = await start({ env: DEMO_ENV })
      KEYS.set(stack.base, stack.key)
      const created = await baton(stack.base, 'sessions', 'create', '--profile', 'demo', '--json')
      expect(created.code, created.stderr).toBe(0)
      const session = JSON.parse(created.stdout) as SessionView
      expect(session.profile).toBe('demo')

      const followed = await baton(
        stack.base,
        'run',
        'Compare two durable queues',
        '--session',
        session.sessionId,
        '--follow',
        '--json',
      )
      expect(followed.code, followed.stderr).toBe(0)
      const lines = followed.stdout.trim().split('\n')
      const run = JSON.parse(lines.at(-1) ?? '{}') as HostedRunView
      expect(run).toMatchObject({ status: 'completed', triggerType: 'user', hosted: true })
      const events = lines.slice(0, -1).map((line) => JSON.parse(line) as SessionEvent)
      expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((a, b) => a - b))
      expect(events.every((e) => e.runId === run.runId)).toBe(true)
      const kinds = events.map((e) => e.kind)
      expect(kinds[0]).toBe('run_queued')
      expect(kinds).toContain('run_ended')
      expect(kinds.filter((k) => k === 'subagent_started')).toHaveLength(2)
      expect(kinds.filter((k) => k === 'record').length).toBeGreaterThan(0)
    },
  )
})
