// Serialised continuations of a hosted parent: late child results become the session's next runs,
// one at a time in admission order, each consuming its delivery under the fenced claim rules; a
// worker killed mid-run ends that run as process loss and the next proceeds.
import { sql } from 'kysely'
import { describe, eventually, expect, test } from '@baton/testing'
import { hostedEnv, leadWithHelper } from './support/hosted-profiles.ts'

const PROFILES = leadWithHelper('Echoes its task')

const TASKS = ['task 1', 'task 2', 'task 3', 'task 4', 'task 5']

describe('serialised continuations of a hosted parent', () => {
  test('five late results become five continuation runs, one at a time in admission order; a SIGKILL mid-run ends that run as process loss, the next proceeds and sees the whole conversation', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(PROFILES, {
      helper: [{ kind: 'recall', delayMs: 1500 }],
      lead: {
        steps: [
          {
            kind: 'tool-calls',
            calls: TASKS.map((prompt) => ({
              toolName: 'delegate',
              input: { name: 'helper', prompt },
            })),
          },
          { kind: 'text', text: 'delegated' },
        ],
        resumeSteps: [{ kind: 'recall', delayMs: 2000 }],
      },
    })
    const stack = await baton({ env })
    const { client } = stack
    const { sessionId } = await client.createSession({ profile: 'lead' })
    const first = await client.startRun(sessionId, { input: 'go', wait: 30_000 })
    expect(first).toMatchObject({ status: 'completed', output: 'delegated' })

    const runsOf = async () =>
      (
        await sql<{
          id: string
          trigger_type: string
          status: string
          cause_attempt_id: string | null
          started_at: Date | null
          terminal_at: Date | null
        }>`
          select r.id, r.trigger_type, r.status, r.cause_attempt_id, a.started_at, a.terminal_at
          from runs r left join attempts a on a.id = r.id
          where r.session_id = ${sessionId} order by r.admission_seq
        `.execute(db)
      ).rows

    // The second continuation run is running: kill the worker that runs it.
    await eventually(
      async () => {
        const runs = await runsOf()
        const continuations = runs.filter((r) => r.trigger_type === 'async_subagent_result')
        return continuations.length === 5 &&
          continuations[0]?.status === 'completed' &&
          continuations[1]?.status === 'active'
          ? true
          : undefined
      },
      { timeoutMs: 60_000, what: 'the second continuation run to be active' },
    )
    await stack.killWorker()
    await stack.startWorker()

    const runs = await eventually(
      async () => {
        const all = await runsOf()
        return all.length === 6 && all.every((r) => r.status !== 'pending' && r.status !== 'active')
          ? all
          : undefined
      },
      { timeoutMs: 90_000, what: 'every run of the session to end' },
    )
    expect(runs.map((r) => [r.trigger_type, r.status])).toEqual([
      ['user', 'completed'],
      ['async_subagent_result', 'completed'],
      ['async_subagent_result', 'failed'],
      ['async_subagent_result', 'completed'],
      ['async_subagent_result', 'completed'],
      ['async_subagent_result', 'completed'],
    ])
    // One at a time: each run started after the one admitted before it ended.
    for (let i = 1; i < runs.length; i += 1)
      expect(runs[i]!.started_at!.getTime()).toBeGreaterThanOrEqual(
        runs[i - 1]!.terminal_at!.getTime(),
      )
    // The killed run ended as process loss; its delivery suppressed naming it, the others
    // delivered by their own runs, each in the order the results were admitted.
    const lost = await sql<{ event: string }>`
      select event from attempt_transitions where attempt_id = ${runs[2]!.id}::uuid
      order by id desc limit 1
    `.execute(db)
    expect(lost.rows[0]?.event).toBe('process_lost')
    const deliveries = (
      await sql<{
        attempt_id: string
        state: string
        consumer_run_id: string
        suppression_reason: string | null
        input: string
      }>`
        select c.attempt_id, c.state, c.consumer_run_id, c.suppression_reason, c.input
        from continuations c join runs r on r.id = c.consumer_run_id
        where c.session_id = ${sessionId} order by r.admission_seq
      `.execute(db)
    ).rows
    expect(deliveries.map((d) => [d.consumer_run_id, d.attempt_id])).toEqual(
      runs.slice(1).map((r) => [r.id, r.cause_attempt_id]),
    )
    expect(deliveries.map((d) => [d.state, d.suppression_reason])).toEqual([
      ['delivered', null],
      ['suppressed', 'consumer_failed'],
      ['delivered', null],
      ['delivered', null],
      ['delivered', null],
    ])
    // The last run saw the whole conversation: every committed run's input, in order; the lost
    // run left nothing in it.
    const last = await client.getRun(runs[5]!.id)
    const kept = deliveries.filter((d) => d.state === 'delivered').map((d) => d.input)
    expect(last.output).toBe(['go', ...kept].join('\n'))
    const texts = kept.map(
      (input) =>
        (JSON.parse(input) as { result: { content: { text: string } } }).result.content.text,
    )
    expect(new Set(texts).size).toBe(4)
    for (const text of texts) expect(TASKS).toContain(text)
  }, 180_000)
})
