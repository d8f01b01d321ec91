// `baton` as a user runs it: a real process against a real API and worker (on this file's database,
// Redis and queue prefix), in a real pseudo-terminal (util-linux `script`) or piped.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect } from '@baton/testing'
import { CLEAR_LINE } from '../src/render.ts'
import {
  ADMIN_API_KEY,
  baton,
  batonOnTerminal,
  batonWithKey,
  cliTest,
  KEYS,
  SLOW_CLI,
  UUID,
} from './support/cli-harness.ts'
/** A child that runs for 1.5 s, delegated with a wait long enough for it to end. */
const SLOW_DELEGATION = ['delegate', 'scripted', '{"delayMs":1500}', '--wait', '10s'] as const

describe('baton CLI', () => {
  cliTest(
    'on a terminal, delegate --wait redraws a progress line (status, elapsed, attempt) until the final output',
    async ({ stack, db }) => {
      const run = await batonOnTerminal(stack.base, ...SLOW_DELEGATION)
      expect(run.code, run.stdout + run.stderr).toBe(0)

      const segments = run.stdout.split(CLEAR_LINE)
      const final = segments.at(-1) ?? ''
      const attemptId = new RegExp(`^attempt +(${UUID})`).exec(final)?.[1]
      expect(attemptId, final).toBeDefined()
      expect(final).toMatch(/status +terminal\r?\nstop +completed\r?\ncategory +-/)
      expect(final).toMatch(new RegExp(`session +cli-${UUID}`))

      const frames = segments.slice(0, -1).flatMap((segment) => {
        const m = /^(\w+) {2}(\d+)\.(\d)s(?: {2}attempt (\S+))?$/.exec(segment)
        return m === null
          ? []
          : [{ status: m[1], tenths: Number(m[2]) * 10 + Number(m[3]), attemptId: m[4] }]
      })
      // Every segment before the final output is a frame; nothing else was drawn.
      expect(frames.length).toBe(segments.length - 2) // the last clear precedes the final output
      const withAttempt = frames.filter((f) => f.attemptId === attemptId)
      expect(withAttempt.length).toBeGreaterThanOrEqual(5)
      expect(new Set(withAttempt.map((f) => f.tenths)).size).toBeGreaterThanOrEqual(5)
      const tenths = frames.map((f) => f.tenths)
      expect(tenths).toEqual([...tenths].sort((a, b) => a - b))
      expect(tenths.at(-1)).toBeGreaterThanOrEqual(14)
      // The status came from the attempt itself, read by bounded waits while the child ran.
      expect(withAttempt.some((f) => f.status === 'running')).toBe(true)
      // Learning the attempt id for the line (the same request under the same key) wrote nothing more.
      const attempts = await sql<{ n: number }>`select count(*)::int as n from attempts`.execute(db)
      expect(attempts.rows[0]?.n).toBe(1)
    },
  )

  cliTest(
    'piped, delegate prints plain output only, and --json one line equal to the API view',
    async ({ stack }) => {
      const plain = await baton(stack.base, ...SLOW_DELEGATION)
      expect(plain.code, plain.stderr).toBe(0)
      expect(plain.stdout).not.toContain('\r')
      expect(plain.stdout).not.toContain('\x1b')
      expect(plain.stdout).toMatch(
        /^attempt +\S+\nagent +\S+\nsession +cli-\S+\nname +scripted\nstatus +terminal\nstop +completed\n/,
      )

      const json = await baton(stack.base, ...SLOW_DELEGATION, '--json')
      expect(json.code, json.stderr).toBe(0)
      expect(json.stdout).not.toContain('\r')
      const lines = json.stdout.split('\n')
      expect(lines.length).toBe(2)
      expect(lines[1]).toBe('')
      const printed = JSON.parse(lines[0] ?? '')
      const fromApi = await (
        await fetch(`${stack.base}/v1/attempts/${printed.attemptId}`, {
          headers: { authorization: `Bearer ${KEYS.get(stack.base) ?? ''}` },
        })
      ).json()
      expect(printed).toEqual(fromApi)
      expect(printed).toMatchObject({ status: 'terminal', stopReason: 'completed' })

      const accepted = await baton(
        stack.base,
        'delegate',
        'scripted',
        'hi',
        '--session',
        's-cli',
        '--json',
      )
      expect(accepted.code, accepted.stderr).toBe(0)
      const answer = JSON.parse(accepted.stdout)
      expect(answer).toEqual({
        agentId: expect.any(String),
        attemptId: expect.any(String),
        status: 'accepted',
      })
      const shown = await baton(stack.base, 'attempts', 'show', answer.attemptId)
      expect(shown.code, shown.stderr).toBe(0)
      expect(shown.stdout).toMatch(
        new RegExp(`^attempt +${answer.attemptId}\nagent +${answer.agentId}\nsession +s-cli\n`),
      )
    },
  )

  cliTest(
    'exit codes: 1 ended not completed, 4 wait bound expired, 3 API error, 2 usage, 5 unreachable',
    async ({ stack }) => {
      const failed = await baton(
        stack.base,
        'delegate',
        'scripted',
        '{"fail":"x"}',
        '--wait',
        '10s',
      )
      expect(failed.code, failed.stderr).toBe(1)
      expect(failed.stdout).toMatch(/stop +error\ncategory +child_failed\n/)

      const hung = await baton(
        stack.base,
        'delegate',
        'scripted',
        '{"hang":true}',
        '--wait',
        '500ms',
        '--json',
      )
      expect(hung.code, hung.stderr).toBe(4)
      const snapshot = JSON.parse(hung.stdout)
      expect(snapshot.status).not.toBe('terminal')
      expect(hung.stderr).toContain(
        `attempt ${snapshot.attemptId} is still ${snapshot.status} after 500ms`,
      )
      const cancelled = await baton(
        stack.base,
        'attempts',
        'cancel',
        snapshot.attemptId,
        '--reason',
        'test',
      )
      expect(cancelled.code, cancelled.stderr).toBe(0)
      expect(cancelled.stdout).toMatch(/outcome +cancel(_requested|led_queued)/)
      const ended = await baton(
        stack.base,
        'attempts',
        'wait',
        snapshot.attemptId,
        '--timeout',
        '10s',
        '--json',
      )
      expect(ended.code, ended.stderr).toBe(1)
      expect(JSON.parse(ended.stdout)).toMatchObject({
        status: 'terminal',
        stopReason: 'aborted',
        failureCategory: 'cancelled',
      })

      const missing = await baton(stack.base, 'attempts', 'show', randomUUID())
      expect(missing.code).toBe(3)
      expect(missing.stderr).toMatch(/ATTEMPT_NOT_FOUND \(HTTP 404\): no attempt/)
      expect(missing.stdout).toBe('')
      const unknown = await baton(stack.base, 'delegate', 'no-such-subagent', 'x', '--wait', '1s')
      expect(unknown.code).toBe(3)
      expect(unknown.stderr).toContain('UNKNOWN_SUBAGENT (HTTP 400)')

      const badFlag = await baton(stack.base, 'delegate', 'scripted', 'x', '--bogus')
      expect(badFlag.code).toBe(2)
      expect(badFlag.stderr).toContain("unknown option '--bogus'")
      const badBound = await baton(
        stack.base,
        'attempts',
        'wait',
        snapshot.attemptId,
        '--timeout',
        '2m',
      )
      expect(badBound.code).toBe(2)
      expect(badBound.stdout).toBe('')

      await stack.close()
      // The API is gone: nothing answers at its address any more.
      const gone = await baton(stack.base, 'attempts', 'show', snapshot.attemptId)
      expect(gone.code).toBe(5)
      expect(gone.stderr).toContain(`cannot reach ${stack.base}`)
    },
  )

  cliTest(
    'attempts steer delivers text to a running child; agents context reads the history',
    async ({ stack }) => {
      const accepted = await baton(
        stack.base,
        'delegate',
        'scripted',
        '{"awaitSteering":1}',
        '--json',
      )
      expect(accepted.code, accepted.stderr).toBe(0)
      const { attemptId, agentId } = JSON.parse(accepted.stdout)
      const steered = await baton(stack.base, 'attempts', 'steer', attemptId, 'turn left', '--json')
      expect(steered.code, steered.stderr).toBe(0)
      expect(JSON.parse(steered.stdout)).toEqual({ attemptId, sequence: expect.any(Number) })
      const ended = await baton(stack.base, 'attempts', 'wait', attemptId, '--timeout', '10s')
      expect(ended.code, ended.stderr).toBe(0)
      expect(ended.stdout).toMatch(/stop +completed\ncategory +-\noutput +turn left\n/)
      const context = await baton(stack.base, 'agents', 'context', agentId, '--json')
      expect(context.code, context.stderr).toBe(0)
      expect(JSON.parse(context.stdout)).toMatchObject({ agentId, name: 'scripted', events: [] })
      const unknownAgent = await baton(stack.base, 'agents', 'context', randomUUID())
      expect(unknownAgent.code).toBe(3)
      expect(unknownAgent.stderr).toContain('AGENT_NOT_FOUND')
    },
  )

  cliTest(
    'keys and namespaces: the admin issues a key that works at once, lists it by prefix, revokes it, and the revoked key is refused',
    async ({ stack }) => {
      const admin = (...args: string[]) => batonWithKey(ADMIN_API_KEY, stack.base, ...args)
      const created = await admin('namespaces', 'create', 'team-x', '--description', 'a team')
      expect(created.code, created.stderr).toBe(0)
      expect((await admin('namespaces', 'list')).stdout).toContain('team-x')
      const issued = await admin('keys', 'create', 'team-x', 'agent host')
      expect(issued.code, issued.stderr).toBe(0)
      const key = issued.stdout.trim()
      expect(key).toMatch(/^bk_[A-Za-z0-9_-]{43}$/)
      expect(issued.stderr).toContain('only time it is shown')

      const done = await batonWithKey(
        key,
        stack.base,
        'delegate',
        'scripted',
        'hi',
        '--wait',
        '10s',
      )
      expect(done.code, done.stderr).toBe(0)
      const listed = await admin('keys', 'list', 'team-x', '--json')
      const keys = (JSON.parse(listed.stdout) as { keys: { keyId: string; prefix: string }[] }).keys
      expect(keys).toHaveLength(1)
      expect(listed.stdout).not.toContain(key)
      expect(key.startsWith(keys[0]?.prefix ?? 'none')).toBe(true)

      expect((await admin('keys', 'revoke', keys[0]?.keyId ?? '')).code).toBe(0)
      const refused = await batonWithKey(key, stack.base, 'delegate', 'scripted', 'hi')
      expect(refused.code).toBe(3)
      expect(refused.stderr).toContain('UNAUTHORIZED')
      expect(refused.stderr).toContain('BATON_API_KEY')
      // A tenant key cannot manage keys.
      expect((await batonWithKey(key, stack.base, 'namespaces', 'list')).code).toBe(3)
    },
  )

  cliTest(
    "a namespace's limits: set, shown (stored or the default), cleared; a bad value is a usage error",
    SLOW_CLI,
    async ({ stack }) => {
      const admin = (...args: string[]) => batonWithKey(ADMIN_API_KEY, stack.base, ...args)
      expect((await admin('namespaces', 'create', 'limited')).code).toBe(0)
      const set = await admin(
        'namespaces',
        'set-limits',
        'limited',
        '--artifact-max-bytes',
        '1000',
        '--ledger-retention',
        '7d',
        '--json',
      )
      expect(set.code, set.stderr).toBe(0)
      expect(JSON.parse(set.stdout)).toMatchObject({
        namespaceId: 'limited',
        limits: {
          artifactMaxBytes: 1000,
          artifactQuotaBytes: null,
          ledgerRetentionMs: 604_800_000,
        },
      })
      const shown = await admin('namespaces', 'limits', 'limited')
      expect(shown.stdout).toContain('artifactMaxBytes  1000\n')
      expect(shown.stdout).toContain('ledgerRetentionMs  604800000')
      expect(shown.stdout).toMatch(/artifactQuotaBytes {2}\d+ \(default\)/)
      const cleared = await admin('namespaces', 'set-limits', 'limited')
      expect(cleared.stdout).toMatch(/artifactMaxBytes {2}\d+ \(default\)/)
      expect(cleared.stdout).toMatch(/ledgerRetentionMs {2}\d+ \(default\)/)
      const bad = await admin('namespaces', 'set-limits', 'limited', '--artifact-max-bytes', '-1')
      expect(bad.code).toBe(2)
      for (const retention of ['30s', '3661d', '7']) {
        const refused = await admin(
          'namespaces',
          'set-limits',
          'limited',
          '--ledger-retention',
          retention,
        )
        expect({ code: refused.code, stdout: refused.stdout }, retention).toEqual({
          code: 2,
          stdout: '',
        })
      }
      // Refused before anything was sent: the limits are as the last command left them.
      expect((await admin('namespaces', 'limits', 'limited')).stdout).toMatch(
        /ledgerRetentionMs {2}\d+ \(default\)/,
      )
    },
  )
})
