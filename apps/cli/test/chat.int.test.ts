// `baton chat` on the demo profile `npm run up` loads, against a real API and worker: turns typed on
// stdin (a pipe, as a script would drive it), each answered, with the children and the continuation
// runs they cause shown as they arrive, and the conversation in the ledger in the order typed.
import { sql } from 'kysely'
import { DEMO_PROFILES_ENV, describe, expect, test } from '@baton/testing'
import { userMessageText } from '@baton/testing/ledger-audit'
import { batonInteractive, KEYS } from './support/cli-harness.ts'

/** The replies a chat printed, in order: `[trigger, text]`. */
const repliesOf = (stdout: string): [string, string][] =>
  [...stdout.matchAll(/^parent \((\w+) run [0-9a-f]{8}\): (.*)$/gm)].map((m) => [m[1]!, m[2]!])

const FIRST = 'Compare two durable queues'
const SECOND = 'Which of the two renews a lock?'
const ASKED = 'Asked two researchers; their answers come back as continuations.'
const NOTED = "Noted a researcher's answer."

describe('baton chat', () => {
  test(
    'two turns typed on stdin: each answered; the children, attributed, and both continuation runs shown as they arrive; /exit ends it; the ledger holds both turns in order',
    // A stack and five runs of the demo, each with a CLI start or two, on a busy machine.
    { timeout: 240_000 },
    async ({ baton: start, db, onTestFinished }) => {
      const stack = await start({ env: DEMO_PROFILES_ENV })
      KEYS.set(stack.base, stack.key)
      const { sessionId } = await stack.client.createSession({ profile: 'demo' })

      const chat = batonInteractive(stack.base, 'chat', '--session', sessionId)
      onTestFinished(() => chat.kill())
      chat.type(FIRST)
      // The first turn's answer, then (the parent having ended its turn) each researcher's result
      // coming back as a continuation run of the session.
      let out = await chat.untilStdout(
        (o) => repliesOf(o).filter(([trigger]) => trigger === 'async_subagent_result').length === 2,
        'the first answer and both continuation runs',
      )
      expect(repliesOf(out)).toEqual([
        ['user', ASKED],
        ['async_subagent_result', NOTED],
        ['async_subagent_result', NOTED],
      ])
      chat.type(SECOND)
      out = await chat.untilStdout((o) => repliesOf(o).length === 4, 'the second answer')
      expect(repliesOf(out).at(-1)).toEqual(['user', NOTED])
      chat.type('/exit')
      const ended = await chat.exited
      expect(ended.code, ended.stderr).toBe(0)
      expect(repliesOf(ended.stdout)).toHaveLength(4)

      // The children's records, attributed to each researcher's attempt, and their lifecycle.
      const lines = ended.stdout.split('\n')
      const kinds = lines.map((line) => /^#\d+ (\w+)/.exec(line)?.[1])
      expect(
        kinds.filter((k) => k === 'subagent_started'),
        ended.stdout,
      ).toHaveLength(2)
      // Each child's end, as the chat shows it whichever way the child ended.
      expect(
        kinds.filter((k) => k === 'subagent_completed' || k === 'subagent_failed'),
        ended.stdout,
      ).toHaveLength(2)
      const children = new Set(
        lines.flatMap((line) => /^#\d+ record +researcher:([0-9a-f]{8})/.exec(line)?.[1] ?? []),
      )
      expect(children.size).toBe(2)
      // Every run's queue, start and end, once each: two user runs and two continuation runs.
      expect(kinds.filter((k) => k === 'run_ended')).toHaveLength(4)
      const seqs = lines.flatMap((line) => /^#(\d+) /.exec(line)?.[1] ?? []).map(Number)
      expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b))

      // The session's conversation, as the ledger keeps it: the runs in admission order, and the
      // parent agent's history holding the first turn before the second.
      const runs = await sql<{ trigger_type: string; input: unknown }>`
        select trigger_type, input from runs where session_id = ${sessionId} order by admission_seq
      `.execute(db)
      expect(runs.rows.map((r) => r.trigger_type)).toEqual([
        'user',
        'async_subagent_result',
        'async_subagent_result',
        'user',
      ])
      const parent = await sql<{ parent_agent_id: string }>`
        select parent_agent_id from sessions where id = ${sessionId}
      `.execute(db)
      const history = await stack.client.getAgentHistory(parent.rows[0]!.parent_agent_id)
      const asked = history.events.flatMap((e) => userMessageText(e.event) ?? [])
      // The user's two turns, with the two results' continuation inputs between them.
      expect(asked).toHaveLength(4)
      expect([asked[0], asked[3]]).toEqual([FIRST, SECOND])
      const said = JSON.stringify(history.events.map((e) => e.event))
      expect(said.indexOf(ASKED)).toBeGreaterThan(said.indexOf(FIRST))
      expect(said.indexOf(ASKED)).toBeLessThan(said.indexOf(SECOND))

      // Piped input that ends at once: the turn is still answered before the chat ends, and the
      // session's earlier runs are not shown again.
      const piped = batonInteractive(stack.base, 'chat', '--session', sessionId)
      onTestFinished(() => piped.kill())
      piped.type('One more question')
      piped.end()
      const third = await piped.exited
      expect(third.code, third.stderr).toBe(0)
      expect(repliesOf(third.stdout)).toEqual([['user', NOTED]])
    },
  )
})
