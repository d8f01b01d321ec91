// Prometheus metrics end to end: the API's /metrics (admin key) and a real worker process's
// /metrics, checked by promtool and read as deltas between two scrapes of each.
import { sql } from 'kysely'
import {
  describe,
  eventually,
  expect,
  freePort,
  promtoolCheck,
  sampleValue,
  test,
  type StartBaton,
} from '@baton/testing'
import { apiTest, delegate } from './support/api-harness.ts'

const ADMIN_KEY = 'metrics-test-admin-key-0123456789abcdef'

/** The API (with an admin key) and one worker process serving /metrics on a port of its own. */
async function startBoth(baton: StartBaton) {
  const port = await freePort()
  const api = await baton({
    apiEnv: { ADMIN_API_KEY: ADMIN_KEY },
    workerEnv: { METRICS_HOST: '127.0.0.1', METRICS_PORT: String(port) },
  })
  const scrape = async (url: string, headers: Record<string, string> = {}) => {
    const response = await fetch(url, { headers })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    return response.text()
  }
  return {
    api,
    scrapeApi: () => scrape(`${api.base}/metrics`, { authorization: `Bearer ${ADMIN_KEY}` }),
    scrapeWorker: () => scrape(`http://127.0.0.1:${port}/metrics`),
  }
}

/** `value(after) - value(before)` of one sample. */
function delta(
  before: string,
  after: string,
  name: string,
  labels: Record<string, string> = {},
): number {
  return sampleValue(after, name, labels) - sampleValue(before, name, labels)
}

type Both = Awaited<ReturnType<typeof startBoth>>

/** A test given the API and a worker process (`both`), both closed after it. */
const metricsTest = test.extend<{ both: Both }>({
  both: async ({ baton }, use) => use(await startBoth(baton)),
})

describe('metrics', () => {
  metricsTest(
    'the API and a worker serve /metrics that promtool accepts; the API needs the admin key and keeps it out of the OpenAPI document',
    async ({ both }) => {
      // One delegation first, so every histogram and labelled counter has samples to lint; its
      // output is above the inline bound, so it is kept in an artifact of namespace `default`.
      const done = await both.api.post(delegate('s-metrics-lint'), {
        name: 'scripted',
        prompt: '{"outputBytes":10000}',
        wait: { timeoutMs: 10_000 },
      })
      expect(done.body).toMatchObject({ status: 'terminal', stopReason: 'completed' })
      for (const text of [await both.scrapeApi(), await both.scrapeWorker()]) {
        expect(text).toContain('baton_attempts_terminal_total')
        expect(text).toContain('process_cpu_user_seconds_total')
        expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' })
      }
      // The scrape-time gauges answered from Redis and Postgres.
      const apiText = await both.scrapeApi()
      expect(sampleValue(apiText, 'baton_scrape_source_up', { source: 'queue' })).toBe(1)
      expect(sampleValue(apiText, 'baton_scrape_source_up', { source: 'artifacts' })).toBe(1)
      expect(sampleValue(apiText, 'baton_scrape_source_up', { source: 'continuations' })).toBe(1)
      // A completed attempt job is removed at once; the gauge still reports every state.
      expect(sampleValue(apiText, 'baton_queue_jobs', { state: 'completed' })).toBe(0)
      expect(sampleValue(apiText, 'baton_queue_jobs', { state: 'waiting' })).toBeGreaterThanOrEqual(
        0,
      )
      expect(sampleValue(apiText, 'baton_artifact_bytes', { namespace: 'default' })).toBe(10_000)

      const refused = await fetch(`${both.api.base}/metrics`, { headers: both.api.auth })
      expect(refused.status).toBe(401)
      expect((await fetch(`${both.api.base}/metrics`)).status).toBe(401)
      const docs = await fetch(`${both.api.base}/docs/json`, { headers: both.api.auth })
      expect(docs.status).toBe(200)
      expect(Object.keys(((await docs.json()) as { paths: object }).paths)).not.toContain(
        '/metrics',
      )
    },
  )

  metricsTest(
    'a delegation that completes moves accepted, terminal{completed} and the latency histograms by one',
    async ({ both }) => {
      const [api0, worker0] = [await both.scrapeApi(), await both.scrapeWorker()]
      const done = await both.api.post(delegate('s-metrics-done'), {
        name: 'scripted',
        prompt: '{"output":"counted"}',
        wait: { timeoutMs: 10_000 },
      })
      expect(done.body).toMatchObject({ status: 'terminal', stopReason: 'completed' })
      const [api1, worker1] = [await both.scrapeApi(), await both.scrapeWorker()]

      expect(delta(api0, api1, 'baton_attempts_accepted_total')).toBe(1)
      expect(delta(api0, api1, 'baton_submit_wait_seconds_count', { result: 'terminal' })).toBe(1)
      const completed = { stop_reason: 'completed', failure_category: 'none' }
      expect(delta(worker0, worker1, 'baton_attempts_terminal_total', completed)).toBe(1)
      expect(delta(worker0, worker1, 'baton_attempt_queued_seconds_count')).toBe(1)
      expect(delta(worker0, worker1, 'baton_attempt_run_seconds_count')).toBe(1)
      expect(delta(worker0, worker1, 'baton_cancel_to_aborted_seconds_count')).toBe(0)
      expect(delta(worker0, worker1, 'baton_ledger_batch_items_sum', { statement: 'commit' })).toBe(
        1,
      )
      expect(delta(worker0, worker1, 'baton_ledger_batch_items_sum', { statement: 'claim' })).toBe(
        1,
      )
    },
  )

  metricsTest(
    'cancelling a running child counts one aborted/cancelled terminal and one cancel-to-aborted latency',
    async ({ both }) => {
      const { attemptId } = await both.api.delegateRunning('s-metrics-cancel')
      const [api0, worker0] = [await both.scrapeApi(), await both.scrapeWorker()]
      expect((await both.api.post(`/v1/attempts/${attemptId}/cancel`, {})).body).toMatchObject({
        outcome: 'cancel_requested',
      })
      const waited = await both.api.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
      expect(waited.body).toMatchObject({
        status: 'terminal',
        stopReason: 'aborted',
        failureCategory: 'cancelled',
      })
      const [api1, worker1] = [await both.scrapeApi(), await both.scrapeWorker()]
      const cancelled = { stop_reason: 'aborted', failure_category: 'cancelled' }
      expect(delta(worker0, worker1, 'baton_attempts_terminal_total', cancelled)).toBe(1)
      expect(delta(worker0, worker1, 'baton_cancel_to_aborted_seconds_count')).toBe(1)
      expect(delta(worker0, worker1, 'baton_attempt_run_seconds_count')).toBe(1)
      // Running, so the worker made it terminal, not the API.
      expect(delta(api0, api1, 'baton_attempts_terminal_total', cancelled)).toBe(0)
    },
  )

  apiTest(
    'a queued attempt the API cancels is counted as a terminal by the API',
    async ({ inProcessApi }) => {
      // No worker: the attempt stays queued until the cancel makes it terminal.
      const api = await inProcessApi({ ADMIN_API_KEY: ADMIN_KEY })
      const scrape = () =>
        fetch(`${api.base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }).then(
          (r) => r.text(),
        )
      const before = await scrape()
      const accepted = await api.post(delegate('s-metrics-queued'), {
        name: 'scripted',
        prompt: '{"output":"never"}',
      })
      const cancel = await api.post(`/v1/attempts/${accepted.body.attemptId}/cancel`, {})
      expect(cancel.body).toMatchObject({ outcome: 'cancelled_queued' })
      const after = await scrape()
      expect(delta(before, after, 'baton_attempts_accepted_total')).toBe(1)
      const cancelled = { stop_reason: 'aborted', failure_category: 'cancelled' }
      expect(delta(before, after, 'baton_attempts_terminal_total', cancelled)).toBe(1)
    },
  )

  metricsTest(
    'a lost lease moves the worker’s lease-loss counter by one, and the reconciler records the process loss',
    async ({ both, db }) => {
      const { attemptId } = await both.api.delegateRunning('s-metrics-lease')
      // Leases are renewing meanwhile.
      await eventually(async () =>
        sampleValue(await both.scrapeWorker(), 'baton_lease_renewals_total') > 0 ? true : undefined,
      )
      const worker0 = await both.scrapeWorker()
      // The owner stalls past its lease: on the database clock, its lease is now over.
      await sql`update attempts set lease_expires_at = now() - interval '1 second' where id = ${attemptId}`.execute(
        db,
      )
      const waited = await both.api.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
      expect(waited.body).toMatchObject({ status: 'terminal', failureCategory: 'process_lost' })
      const worker1 = await eventually(async () => {
        const text = await both.scrapeWorker()
        return delta(worker0, text, 'baton_lease_losses_total') > 0 ? text : undefined
      })
      expect(delta(worker0, worker1, 'baton_lease_losses_total')).toBe(1)
      const lost = { stop_reason: 'error', failure_category: 'process_lost' }
      expect(delta(worker0, worker1, 'baton_attempts_terminal_total', lost)).toBe(1)
      expect(
        delta(worker0, worker1, 'baton_reconciler_actions_total', { action: 'process_loss' }),
      ).toBe(1)
    },
  )

  metricsTest(
    'a late result admits a continuation; its claim and delivery move the claim and delivery counters and the state gauge',
    async ({ both }) => {
      const session = 's-metrics-continuation'
      const run = await both.api.post(`/v1/sessions/${session}/runs`, {})
      expect(run.status).toBe(201)
      const accepted = await both.api.post(delegate(session), {
        name: 'scripted',
        prompt: '{"output":"late","delayMs":300}',
        parentRunId: run.body.runId,
      })
      // The parent run ends before the result lands: the result is admitted as a continuation.
      expect((await both.api.post(`/v1/runs/${run.body.runId}/complete`, {})).status).toBe(200)
      const waited = await both.api.get(
        `/v1/attempts/${accepted.body.attemptId}/wait?timeoutMs=10000`,
      )
      expect(waited.body).toMatchObject({ status: 'terminal', stopReason: 'completed' })
      const api0 = await both.scrapeApi()
      expect(sampleValue(api0, 'baton_continuations', { state: 'pending' })).toBe(1)

      const claimed = await both.api.post(`/v1/sessions/${session}/continuations/claim`, {
        timeoutMs: 5000,
        leaseMs: 5000,
      })
      expect(claimed.status).toBe(200)
      const { claimToken, generation } = claimed.body.claim
      const api1 = await both.scrapeApi()
      expect(delta(api0, api1, 'baton_continuation_claims_total')).toBe(1)
      expect(sampleValue(api1, 'baton_continuations', { state: 'claimed' })).toBe(1)

      const completed = await both.api.post(`/v1/continuations/${claimed.body.runId}/complete`, {
        claimToken,
        generation,
      })
      expect(completed.status).toBe(200)
      const api2 = await both.scrapeApi()
      expect(
        delta(api1, api2, 'baton_continuation_deliveries_total', { action: 'acknowledged' }),
      ).toBe(1)
      // The gauge counts open continuations only: a delivered one leaves it (and is counted by
      // the deliveries counter above).
      expect(api2).not.toMatch(/^baton_continuations\{state="delivered"\}/m)
      expect(sampleValue(api2, 'baton_continuations', { state: 'claimed' })).toBe(0)
    },
  )
})
