// The demo flow end to end, API and workers as separate processes: a hosted parent delegates to
// two children and ends its turn; each late result becomes a continuation run, one at a time,
// with its receipt; the session's event stream (SSE, read from the ledger) shows every record
// once, attributed, in a stable order, and resumes on another API process after Last-Event-ID.
import { sql } from 'kysely'
import { continuationDigest } from '@baton/contracts'
import { describe, eventually, expect, test } from '@baton/testing'
import { hostedEnv, leadWithHelper } from './support/hosted-profiles.ts'

interface StreamEvent {
  readonly id: number
  readonly event: string
  readonly data: {
    readonly seq: number
    readonly kind: string
    readonly runId: string | null
    readonly source: Readonly<Record<string, unknown>> | null
    readonly payload: Readonly<Record<string, unknown>>
  }
}

/** Reads a stream to its end (`follow=false`) and parses its frames. */
async function readStream(
  base: string,
  path: string,
  headers: Record<string, string>,
): Promise<StreamEvent[]> {
  const response = await fetch(`${base}${path}`, { headers })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  const text = await response.text()
  return text
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const field = (name: string) =>
        frame
          .split('\n')
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2) ?? ''
      return {
        id: Number(field('id')),
        event: field('event'),
        data: JSON.parse(field('data')) as StreamEvent['data'],
      }
    })
}

describe('the demo flow', () => {
  test('a parent delegates to two children and ends its turn; two continuation runs with their receipts, one at a time; the SSE stream shows every record once, attributed, and resumes on another API process', async ({
    baton,
    db,
  }) => {
    const env = await hostedEnv(leadWithHelper('Answers one question'), {
      helper: [{ kind: 'recall', delayMs: 1000 }],
      lead: {
        steps: [
          {
            kind: 'tool-calls',
            calls: ['first question', 'second question'].map((prompt) => ({
              toolName: 'delegate',
              input: { name: 'helper', prompt },
            })),
          },
          { kind: 'text', text: 'Delegated two questions; their answers come back later.' },
        ],
        resumeSteps: [{ kind: 'text', text: 'Noted an answer.' }],
      },
    })
    const stack = await baton({ env })
    const other = await baton({ env, workers: 0 })
    const { client } = stack
    const { sessionId } = await client.createSession({ profile: 'lead' })
    const first = await client.startRun(sessionId, { input: 'Research two things', wait: 30_000 })
    expect(first.status).toBe('completed')

    const runs = await eventually(
      async () => {
        const rows = (
          await sql<{
            id: string
            trigger_type: string
            status: string
            started_at: Date
            terminal_at: Date
          }>`
            select r.id, r.trigger_type, r.status, a.started_at, a.terminal_at
            from runs r left join attempts a on a.id = r.id
            where r.session_id = ${sessionId} order by r.admission_seq
          `.execute(db)
        ).rows
        return rows.length === 3 && rows.every((r) => r.status === 'completed') ? rows : undefined
      },
      { timeoutMs: 60_000, what: 'two continuation runs to complete' },
    )
    expect(runs.map((r) => r.trigger_type)).toEqual([
      'user',
      'async_subagent_result',
      'async_subagent_result',
    ])
    for (let i = 1; i < runs.length; i += 1)
      expect(runs[i]!.started_at.getTime()).toBeGreaterThanOrEqual(
        runs[i - 1]!.terminal_at.getTime(),
      )
    // Each continuation run consumed its result, delivered with a receipt bound to its input.
    const deliveries = (
      await sql<{
        attempt_id: string
        state: string
        consumer_run_id: string
        receipt: string
        input: string
      }>`
        select attempt_id, state, consumer_run_id, receipt, input from continuations
        where session_id = ${sessionId}
      `.execute(db)
    ).rows
    expect(deliveries.map((d) => d.state)).toEqual(['delivered', 'delivered'])
    expect(deliveries.map((d) => d.consumer_run_id).sort()).toEqual(
      [runs[1]!.id, runs[2]!.id].sort(),
    )
    for (const d of deliveries)
      expect(JSON.parse(d.receipt)).toMatchObject({
        attemptId: d.attempt_id,
        inputDigest: continuationDigest(d.input),
      })

    const path = `/v1/sessions/${sessionId}/events?follow=false`
    const all = await readStream(stack.base, path, stack.auth)
    // Every event once, in the session's order: ids 1..n.
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1))
    expect(all.every((e) => e.data.seq === e.id && e.data.kind === e.event)).toBe(true)
    const kinds = all.map((e) => e.event)
    expect(kinds.filter((k) => k === 'run_queued')).toHaveLength(3)
    expect(kinds.filter((k) => k === 'run_ended')).toHaveLength(3)
    expect(kinds.filter((k) => k === 'subagent_started')).toHaveLength(2)
    expect(kinds.filter((k) => k === 'subagent_completed')).toHaveLength(2)
    const children = deliveries.map((d) => d.attempt_id)
    for (const kind of ['subagent_started', 'subagent_completed']) {
      const lifecycle = all.filter((e) => e.event === kind)
      expect(lifecycle.map((e) => e.data.payload.attemptId).sort()).toEqual([...children].sort())
      for (const e of lifecycle)
        expect(e.data.payload).toMatchObject({
          name: 'helper',
          parentRunId: first.runId,
          taskId: e.data.payload.attemptId,
        })
    }
    // The parent's records have no source; each child's records name it, in its own order.
    const parentRecords = all.filter((e) => e.event === 'record' && e.data.source === null)
    expect(new Set(parentRecords.map((e) => e.data.runId))).toEqual(new Set(runs.map((r) => r.id)))
    for (const child of children) {
      const records = all.filter((e) => e.event === 'record' && e.data.source?.attemptId === child)
      expect(records.length).toBeGreaterThan(0)
      expect(records.map((e) => e.data.source?.childSeq)).toEqual(records.map((_, i) => i))
      for (const e of records)
        expect(e.data.source).toMatchObject({
          kind: 'subagent',
          name: 'helper',
          taskId: child,
          parentRunId: first.runId,
          agentId: expect.any(String),
        })
      // A child's records come after its start and before its completion.
      const started = all.find(
        (e) => e.event === 'subagent_started' && e.data.payload.attemptId === child,
      )!
      expect(records[0]!.id).toBeGreaterThan(started.id)
    }

    // Resume on the other API process after the middle event: the rest, nothing lost or repeated.
    const middle = all[Math.floor(all.length / 2)]!
    const rest = await readStream(other.base, path, {
      ...other.auth,
      'last-event-id': String(middle.id),
    })
    expect(rest).toEqual(all.filter((e) => e.id > middle.id))
    // A run's stream: the events of that run only.
    const ofFirst = await readStream(
      other.base,
      `/v1/runs/${first.runId}/events?follow=false`,
      other.auth,
    )
    expect(ofFirst).toEqual(all.filter((e) => e.data.runId === first.runId))
  }, 180_000)
})
