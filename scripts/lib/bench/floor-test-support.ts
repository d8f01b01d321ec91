// What the tests of the queue floor given a ledger (Baton's core, the bare ledger) check alike.
import { createBatonClient, type BatonClient } from '@baton/client'
import { eventually, expect, freePort } from '@baton/testing'
import { startFloorService } from './floor.ts'
import type { LedgerReader } from './http-load.ts'
import type { LedgerTimes } from './wait-steps.ts'

/**
 * The queue floor's API and two workers writing the ledger of `databaseUrl` (which one: `extra`,
 * say `FLOOR_LEDGER`), on the test's Redis and prefix, and a client of its API.
 */
export async function startFloorWithLedger(
  ctx: { readonly redisUrl: string; readonly queuePrefix: string },
  databaseUrl: string,
  extra: Record<string, string> = {},
) {
  const port = await freePort()
  const services = await startFloorService(
    {
      DATABASE_URL: databaseUrl,
      REDIS_URL: ctx.redisUrl,
      QUEUE_PREFIX: ctx.queuePrefix,
      PORT: String(port),
      WORKER_CONCURRENCY: '10',
      ...extra,
    },
    2,
  )
  return { services, client: createBatonClient({ baseUrl: `http://127.0.0.1:${port}` }) }
}

type Delegation = Parameters<BatonClient['delegate']>[0]
type WaitedView = Awaited<ReturnType<BatonClient['delegateAndWait']>>

/**
 * 40 submits, then 10 submit-and-waits, each checked as it answers (bounded at 10 s: a wait the
 * bell never ends fails at its first bound, well inside the test's timeout, and a test run beside
 * many others on two cores is not failed by a stall of a few seconds) by `checkView` after
 * the terminal `completed` / `ok` every floor answers. Returns every attempt id and the waited views.
 */
export async function submitThenWait(
  client: BatonClient,
  input: Delegation,
  checkView: (view: WaitedView) => void = () => {},
): Promise<{ ids: string[]; waited: WaitedView[] }> {
  const accepted = await Promise.all(Array.from({ length: 40 }, () => client.delegate(input)))
  const waited: WaitedView[] = []
  for (let i = 0; i < 10; i += 1) {
    const view = await client.delegateAndWait(input, 10_000)
    expect(view).toMatchObject({ status: 'terminal', stopReason: 'completed', output: 'ok' })
    checkView(view)
    waited.push(view)
  }
  return { ids: [...accepted.map((a) => a.attemptId), ...waited.map((w) => w.attemptId)], waited }
}

/**
 * A wait answers after the commit, so each waited attempt's ledger times are there, in statement
 * order (accept < claim < commit); then every one of the 50 attempts ends.
 */
export async function expectOrderedAndDrained(
  times: ReadonlyMap<string, LedgerTimes>,
  reader: LedgerReader,
): Promise<void> {
  expect(times.size).toBe(10)
  for (const t of times.values()) {
    expect(t.acceptedAtMs).toBeLessThan(t.claimedAtMs ?? Number.NaN)
    expect(t.claimedAtMs).toBeLessThan(t.committedAtMs)
  }
  await eventually(async () => ((await reader.openCount()) === 0 ? true : undefined), {
    what: 'every attempt of the floor to end',
  })
  expect((await reader.span()).n).toBe(50)
}
