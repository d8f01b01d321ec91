// Bounded output memory per worker: many maximal outputs at once cost attempts, never the process.
import { sql } from 'kysely'
import { SCRIPT_OUTPUT_BYTES_MAX } from '@baton/contracts'
import type { ContentBlock } from '@baton/subagents'
import { describe, eventually, expect, test } from '@baton/testing'
import {
  accept,
  childProvider,
  enqueue,
  startRuntime,
  untilTerminal,
} from './support/worker-harness.ts'

const DELEGATIONS = 200
const MiB = 1024 * 1024

describe('output memory budget', () => {
  test('200 concurrent maximal outputs: every attempt terminal, completed or output_budget_exceeded, and the worker never exits', async ({
    baton,
    db,
    redisUrl,
    queuePrefix,
  }) => {
    // A heap far below 100 concurrent outputs of 16 MiB: only the budget keeps the worker alive.
    // Production lease timing: a busy shared machine must not turn slow heartbeats into loss.
    const { worker } = await baton({
      api: false,
      workerEnv: {
        LEASE_TTL_MS: '15000',
        HEARTBEAT_INTERVAL_MS: '3000',
        WORKER_CONCURRENCY: '100',
        OUTPUT_MEMORY_BUDGET_BYTES: String(64 * MiB),
        NODE_OPTIONS: '--max-old-space-size=256',
      },
    })
    const prompt = JSON.stringify({ outputBytes: SCRIPT_OUTPUT_BYTES_MAX })
    const attemptIds = await Promise.all(
      Array.from({ length: DELEGATIONS }, () => accept(db, prompt)),
    )
    await enqueue({ redisUrl, queuePrefix }, ...attemptIds)
    const settled = await Promise.race([
      eventually(
        async () => {
          const open = await sql<{ n: number }>`
            select count(*)::int as n from attempts
            where id = any(${attemptIds}::uuid[]) and status <> 'terminal'
          `.execute(db)
          return open.rows[0]?.n === 0 ? true : undefined
        },
        { timeoutMs: 120_000, intervalMs: 200, what: 'every attempt to be terminal' },
      ),
      worker.exited.then((code) => {
        throw new Error(`the worker exited (${String(code)}):\n${worker.output().slice(-2000)}`)
      }),
    ])
    expect(settled).toBe(true)
    const ends = await sql<{ stop_reason: string; failure_category: string | null; n: number }>`
      select stop_reason, failure_category, count(*)::int as n from attempts
      where id = any(${attemptIds}::uuid[]) group by 1, 2 order by 1, 2
    `.execute(db)
    const byEnd = new Map(ends.rows.map((r) => [`${r.stop_reason}/${r.failure_category}`, r.n]))
    const completed = byEnd.get('completed/null') ?? 0
    const refused = byEnd.get('error/output_budget_exceeded') ?? 0
    expect(completed + refused, JSON.stringify(ends.rows)).toBe(DELEGATIONS)
    expect(completed).toBeGreaterThanOrEqual(1)
    const full = await sql<{ n: number }>`
      select count(*)::int as n from attempts
      where id = any(${attemptIds}::uuid[])
        and stop_reason = 'completed' and output_bytes <> ${SCRIPT_OUTPUT_BYTES_MAX}
    `.execute(db)
    expect(full.rows[0]?.n).toBe(0)
    expect(worker.isClosed()).toBe(false)
  })

  test('a child that reserved nothing is held when it returns: an output beyond the budget ends output_budget_exceeded, and none of it is stored', async ({
    services: ctx,
    db,
  }) => {
    // Like a model's answer: the size is known only once the child returns it.
    const provider = childProvider((request) => {
      const text = request.prompt.map((b) => b.text).join('')
      const output: ContentBlock[] = [
        { type: 'text', text: text === 'big' ? 'y'.repeat(2 * MiB) : text },
      ]
      return Promise.resolve({ output, stopReason: 'completed' })
    })
    const runtime = await startRuntime(ctx, provider, { OUTPUT_MEMORY_BUDGET_BYTES: String(MiB) })
    const big = await accept(db, 'big')
    const small = await accept(db, 'small')
    await enqueue(ctx, big, small)
    expect(await untilTerminal(db, big)).toMatchObject({
      stopReason: 'error',
      failureCategory: 'output_budget_exceeded',
      outputBytes: 0,
    })
    expect(await untilTerminal(db, small)).toMatchObject({
      stopReason: 'completed',
      output: 'small',
    })
    await runtime.shutdownChecked(5_000)
  })
})
