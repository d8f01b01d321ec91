// `baton runs` and `baton continuations` against a real API and worker: a parent run delegates and
// moves on, and its child's result comes back exactly once as a continuation the CLI claims.
import { randomUUID } from 'node:crypto'
import {
  continuationDigest,
  type ContinuationClaim,
  type ContinuationConclusion,
  type RunView,
  type TerminalAttemptView,
} from '@baton/contracts'
import { auditContinuations, describe, expect } from '@baton/testing'
import { baton, cliTest, expectExits, SLOW_CLI, UUID } from './support/cli-harness.ts'

/** `baton ARGS --json` that must succeed: its answer. */
async function answer<T>(base: string, ...args: string[]): Promise<T> {
  const run = await baton(base, ...args, '--json')
  expect(run.code, `baton ${args.join(' ')}\n${run.stderr}`).toBe(0)
  return JSON.parse(run.stdout) as T
}

/** `baton delegate scripted PROMPT` from the run `runId` of `session`: the attempt's id. */
async function delegateFrom(
  base: string,
  session: string,
  runId: string,
  prompt: string,
  ...more: string[]
): Promise<string> {
  const args = ['delegate', 'scripted', prompt, '--session', session, '--parent-run', runId]
  return (await answer<{ attemptId: string }>(base, ...args, ...more)).attemptId
}

/** `baton continuations claim SESSION` that must find a continuation within 20s. */
const claimNext = (base: string, session: string, ...more: string[]) =>
  answer<ContinuationClaim>(base, 'continuations', 'claim', session, '--timeout', '20s', ...more)

/** The arguments of a call fenced by `claim`: its run, claim token and generation. */
const fenceArgs = (claim: ContinuationClaim): string[] => [
  claim.runId,
  '--claim-token',
  claim.claim.claimToken,
  '--generation',
  String(claim.claim.generation),
]

describe('baton runs and continuations', () => {
  cliTest(
    'a delegation with a parent run finishes after the run completed: claim returns it once, complete delivers it, a second claim finds nothing (exit 4)',
    SLOW_CLI,
    async ({ stack, db }) => {
      const session = `cli-${randomUUID()}`
      const run = await answer<RunView>(stack.base, 'runs', 'create', session)
      expect(run).toMatchObject({ sessionId: session, triggerType: 'user', status: 'active' })
      const shown = await baton(stack.base, 'runs', 'show', run.runId)
      expect(shown.code, shown.stderr).toBe(0)
      expect(shown.stdout).toMatch(
        new RegExp(
          `^run +${run.runId}\nsession +${session}\ntrigger +user\nstatus +active\ncause +-\n`,
        ),
      )

      const attemptId = await delegateFrom(
        stack.base,
        session,
        run.runId,
        '{"output":"the answer ✓","delayMs":300}',
      )
      const completed = await answer<RunView>(stack.base, 'runs', 'complete', run.runId)
      expect(completed).toMatchObject({ runId: run.runId, status: 'completed' })
      const ended = await answer<TerminalAttemptView>(
        stack.base,
        'attempts',
        'wait',
        attemptId,
        '--timeout',
        '20s',
      )
      expect(ended).toMatchObject({ stopReason: 'completed', output: 'the answer ✓' })
      expect(ended.delivery?.state).toBe('pending')

      const claim = await claimNext(stack.base, session, '--lease', '30s')
      expect(claim.attemptId).toBe(attemptId)
      expect(claim.runId).toBe(ended.delivery?.consumingRunId)
      expect(JSON.parse(claim.receipt).inputDigest).toBe(continuationDigest(claim.input))
      expect(claim.input).toContain('the answer ✓')
      const fence = fenceArgs(claim)
      const renewed = await baton(stack.base, 'continuations', 'heartbeat', ...fence)
      expect(renewed.code, renewed.stderr).toBe(0)
      expect(renewed.stdout).toMatch(new RegExp(`^runId +${claim.runId}\nleaseExpiresAt +\\S+\n$`))

      const settled = await answer<ContinuationConclusion>(
        stack.base,
        'continuations',
        'complete',
        ...fence,
      )
      expect(settled).toMatchObject({
        runId: claim.runId,
        attemptId,
        receipt: claim.receipt,
        delivery: { state: 'delivered' },
        replayed: false,
      })
      const continuation = await answer<RunView>(stack.base, 'runs', 'show', claim.runId)
      expect(continuation).toMatchObject({
        sessionId: session,
        triggerType: 'async_subagent_result',
        causeAttemptId: attemptId,
      })

      const none = await baton(stack.base, 'continuations', 'claim', session, '--timeout', '500ms')
      expect(none.code).toBe(4)
      expect(none.stdout).toBe('')
      expect(none.stderr).toBe(
        `baton: no continuation of session ${session} to claim after 500ms\n`,
      )
      expect(await auditContinuations(db, [session])).toMatchObject({ duplicate: 0, missing: 0 })

      // Each new command's failure path exits as the README's table says.
      const unknownRun = randomUUID()
      await expectExits(stack.base, [
        {
          args: ['runs', 'show', unknownRun],
          code: 3,
          stderr: new RegExp(`RUN_NOT_FOUND \\(HTTP 404\\): no run ${unknownRun}`),
        },
        {
          args: ['runs', 'fail', run.runId],
          code: 3,
          stderr: /RUN_NOT_ACTIVE \(HTTP 409\): the run is completed, not active/,
        },
        { args: ['runs', 'complete', unknownRun], code: 3, stderr: /RUN_NOT_FOUND \(HTTP 404\)/ },
        { args: ['runs', 'cancel', unknownRun], code: 3, stderr: /RUN_NOT_FOUND \(HTTP 404\)/ },
        {
          args: ['runs', 'create', 'no spaces'],
          code: 3,
          stderr: /VALIDATION_FAILED \(HTTP 400\)/,
        },
        {
          args: ['runs', 'create', session, '--consume', 'not-a-uuid'],
          code: 3,
          stderr: /VALIDATION_FAILED \(HTTP 400\)/,
        },
        {
          args: ['delegate', 'scripted', 'hi', '--session', session, '--parent-run', unknownRun],
          code: 3,
          stderr: /RUN_NOT_FOUND \(HTTP 404\)/,
        },
        {
          args: ['continuations', 'claim', session, '--timeout', '200ms'],
          code: 4,
          stderr: /no continuation of session .* to claim after 200ms/,
        },
        {
          args: ['continuations', 'claim', session, '--lease', '500ms'],
          code: 2,
          stderr: /a lease is at least 1s and at most 10m/,
        },
        {
          args: ['continuations', 'complete', claim.runId, '--generation', '1'],
          code: 2,
          stderr: /required option '--claim-token <token>' not specified/,
        },
        {
          args: ['continuations', 'fail', ...fence.slice(0, -1), '0'],
          code: 2,
          stderr: /use a whole number from 1/,
        },
        {
          args: [
            'continuations',
            'fail',
            claim.runId,
            '--claim-token',
            randomUUID(),
            '--generation',
            '1',
          ],
          code: 3,
          stderr: /STALE_CLAIM \(HTTP 409\)/,
        },
        {
          args: ['continuations', 'heartbeat', ...fence],
          code: 3,
          stderr: /(STALE_CLAIM|RUN_NOT_ACTIVE) \(HTTP 409\)/,
        },
      ])
      // The delivered continuation was not changed by any refused call.
      expect(await answer<RunView>(stack.base, 'runs', 'show', claim.runId)).toEqual(continuation)
    },
  )

  cliTest(
    'runs fail and runs cancel settle a run; --consumed names results it consumed',
    SLOW_CLI,
    async ({ stack }) => {
      const session = `cli-${randomUUID()}`
      const first = await answer<RunView>(stack.base, 'runs', 'create', session)
      const failed = await baton(stack.base, 'runs', 'fail', first.runId)
      expect(failed.code, failed.stderr).toBe(0)
      expect(failed.stdout).toMatch(new RegExp(`^run +${UUID}\n(.*\n){2}status +failed\n`))
      const second = await answer<RunView>(stack.base, 'runs', 'create', session)
      expect(await answer<RunView>(stack.base, 'runs', 'cancel', second.runId)).toMatchObject({
        runId: second.runId,
        status: 'cancelled',
      })

      // A result that lands while its parent is active is held for it; the run names it consumed.
      const third = await answer<RunView>(stack.base, 'runs', 'create', session)
      const attemptId = await delegateFrom(
        stack.base,
        session,
        third.runId,
        'held',
        '--wait',
        '20s',
      )
      const done = await answer<RunView>(
        stack.base,
        'runs',
        'complete',
        third.runId,
        '--consumed',
        attemptId,
      )
      expect(done.status).toBe('completed')
      const view = await answer<TerminalAttemptView>(stack.base, 'attempts', 'show', attemptId)
      expect(view.delivery).toMatchObject({ state: 'delivered', consumingRunId: third.runId })
      await expectExits(stack.base, [
        {
          args: ['continuations', 'claim', session, '--timeout', '300ms'],
          code: 4,
          stderr: /no continuation/,
        },
      ])
    },
  )

  cliTest(
    'continuations fail suppresses the result; an explicit run (runs create --consume) consumes it once',
    SLOW_CLI,
    async ({ stack, db }) => {
      const session = `cli-${randomUUID()}`
      const parent = await answer<RunView>(stack.base, 'runs', 'create', session)
      const attemptId = await delegateFrom(stack.base, session, parent.runId, 'late')
      await answer<RunView>(stack.base, 'runs', 'complete', parent.runId)
      const claim = await claimNext(stack.base, session)
      expect(claim.attemptId).toBe(attemptId)
      const failed = await answer<ContinuationConclusion>(
        stack.base,
        'continuations',
        'fail',
        ...fenceArgs(claim),
      )
      expect(failed.delivery).toMatchObject({
        state: 'suppressed',
        suppression: { reason: 'consumer_failed' },
      })

      const explicit = await answer<RunView>(
        stack.base,
        'runs',
        'create',
        session,
        '--consume',
        attemptId,
      )
      expect(explicit).toMatchObject({ triggerType: 'explicit', status: 'active' })
      await answer<RunView>(stack.base, 'runs', 'complete', explicit.runId)
      const view = await answer<TerminalAttemptView>(stack.base, 'attempts', 'show', attemptId)
      expect(view.delivery).toMatchObject({ state: 'delivered', consumingRunId: explicit.runId })
      await expectExits(stack.base, [
        {
          args: ['runs', 'create', session, '--consume', attemptId],
          code: 3,
          stderr: /RESULT_NOT_CONSUMABLE \(HTTP 409\)/,
        },
      ])
      expect(await auditContinuations(db, [session])).toMatchObject({ duplicate: 0, missing: 0 })
    },
  )
})
