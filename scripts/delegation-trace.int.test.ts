// One delegation is one trace across the API and the worker. Both run in this test process and
// export to one in-memory exporter, but nothing of the API reaches the worker except the job:
// the trace context travels in the job data, as it does between processes.
import { PassThrough } from 'node:stream'
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  SpanKind,
  createLogger,
  createTracing,
  type Logger,
  type ReadableSpan,
} from '@baton/observability'
import { createAttemptQueue } from '@baton/queue'
import { eventually, expect, test } from '@baton/testing'
import { delegate, startApi, type ApiHarness } from '../apps/api/test/support/api-harness.ts'
import { startRuntime } from '../apps/worker/test/support/worker-harness.ts'

const OFF = { otlp: undefined, serviceName: undefined } as const
const DELEGATE_ROUTE = 'POST /v1/sessions/:sessionId/delegations'
const BATCH_ROUTE = 'POST /v1/sessions/:sessionId/delegations/batch'

/** Log lines written to a stream, parsed. */
function capturedLog(service: string): { logger: Logger; lines: Record<string, unknown>[] } {
  const sink = new PassThrough()
  const lines: Record<string, unknown>[] = []
  let rest = ''
  sink.on('data', (chunk: Buffer) => {
    const text = rest + chunk.toString('utf8')
    const parts = text.split('\n')
    rest = parts.pop() ?? ''
    for (const line of parts) if (line !== '') lines.push(JSON.parse(line))
  })
  return { logger: createLogger({ service, level: 'debug', destination: sink }), lines }
}

/** The test's services, an in-memory exporter, and traced apps that export to it. */
interface TracedSystem {
  readonly exporter: InMemorySpanExporter
  /** An in-process API (free port) traced as `baton-api`. */
  api(logger?: Logger): Promise<ApiHarness>
  /** An in-process worker running the real scripted child, traced as `baton-worker`. */
  worker(logger?: Logger): Promise<void>
  /** The data of an attempt's job as Redis holds it. */
  jobData(attemptId: string): Promise<unknown>
}

const tracedTest = test.extend<{ traced: TracedSystem }>({
  traced: async ({ databaseUrl, redisUrl, queuePrefix, track }, use) => {
    const ctx = { databaseUrl, redisUrl, queuePrefix, track }
    const exporter = new InMemorySpanExporter()
    const tracing = (service: string) =>
      createTracing({
        service,
        config: OFF,
        spanProcessors: [new SimpleSpanProcessor({ exporter })],
      })
    // Closed last-started first: the worker before the API.
    const closers: (() => Promise<void>)[] = []
    await use({
      exporter,
      async api(logger) {
        const api = await startApi(ctx, {}, { tracing: tracing('baton-api') }, logger)
        track(api.api)
        closers.unshift(() => api.api.close())
        return api
      },
      async worker(logger) {
        const runtime = await startRuntime(
          ctx,
          undefined,
          {},
          {
            tracing: tracing('baton-worker'),
            ...(logger === undefined ? {} : { logger }),
          },
        )
        closers.unshift(() => runtime.shutdownChecked(5_000))
      },
      async jobData(attemptId) {
        const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
        try {
          return (await queue.getJob(attemptId))?.data
        } finally {
          await queue.close()
        }
      },
    })
    for (const close of closers) await close()
  },
})

async function terminal(api: ApiHarness, attemptId: string): Promise<void> {
  const waited = await api.get(`/v1/attempts/${attemptId}/wait?timeoutMs=10000`)
  expect(waited.body).toMatchObject({ status: 'terminal', stopReason: 'completed' })
}

const spanId = (span: ReadableSpan) => span.spanContext().spanId
const traceId = (span: ReadableSpan) => span.spanContext().traceId
const serviceOf = (span: ReadableSpan) => span.resource.attributes['service.name']

/** The one finished span named `name` whose attribute `baton.attempt_id` is `attemptId`. */
function attemptSpan(spans: readonly ReadableSpan[], name: string, attemptId: string) {
  const found = spans.filter(
    (s) => s.name === name && s.attributes['baton.attempt_id'] === attemptId,
  )
  expect(found, `${name} of ${attemptId}`).toHaveLength(1)
  return found[0]!
}

/** Resolves once the worker's outermost span of `attemptId` has ended (it ends last). */
function untilWorkerDone(exporter: InMemorySpanExporter, attemptId: string) {
  return eventually(
    async () =>
      exporter
        .getFinishedSpans()
        .some((s) => s.name === 'baton.attempt' && s.attributes['baton.attempt_id'] === attemptId)
        ? true
        : undefined,
    { what: `the worker span of ${attemptId}` },
  )
}

/**
 * Every span of the trace has its parent in the trace, except `root`, which has none; returns the
 * chain of names from `span` up to the root.
 */
function ancestry(trace: readonly ReadableSpan[], root: ReadableSpan, span: ReadableSpan) {
  const byId = new Map(trace.map((s) => [spanId(s), s]))
  for (const s of trace) {
    if (s === root) expect(s.parentSpanContext).toBeUndefined()
    else expect(byId.has(s.parentSpanContext?.spanId ?? ''), `parent of ${s.name}`).toBe(true)
  }
  const chain: string[] = []
  for (let at: ReadableSpan | undefined = span; at !== undefined;) {
    chain.push(at.name)
    at = at.parentSpanContext === undefined ? undefined : byId.get(at.parentSpanContext.spanId)
  }
  return chain
}

tracedTest(
  'one delegation is one trace: request → accept/enqueue → attempt → claim, run, commit',
  async ({ traced }) => {
    const { exporter } = traced
    const apiLog = capturedLog('baton-api')
    const workerLog = capturedLog('baton-worker')
    const api = await traced.api(apiLog.logger)

    const accepted = await api.post(delegate('s-trace'), {
      name: 'scripted',
      prompt: '{"output":"traced"}',
      metadata: { traceId: 'caller-label-7' },
    })
    expect(accepted.status).toBe(202)
    const { attemptId } = accepted.body
    // Read while the job waits: a completed attempt job is removed at once. Then a worker runs it.
    const jobData = await traced.jobData(attemptId)
    await traced.worker(workerLog.logger)
    await terminal(api, attemptId)
    await untilWorkerDone(exporter, attemptId)

    const spans = exporter.getFinishedSpans()
    const request = spans.find(
      (s) => s.name === DELEGATE_ROUTE && s.attributes['http.response.status_code'] === 202,
    )!
    expect(request.kind).toBe(SpanKind.SERVER)
    const trace = spans.filter((s) => traceId(s) === traceId(request))
    const accept = attemptSpan(trace, 'baton.accept', attemptId)
    const enqueue = attemptSpan(trace, 'baton.enqueue', attemptId)
    const attempt = attemptSpan(trace, 'baton.attempt', attemptId)
    const claim = attemptSpan(trace, 'baton.claim', attemptId)
    const commit = attemptSpan(trace, 'baton.commit', attemptId)
    const run = attemptSpan(trace, 'baton.run', attemptId)
    // Nothing else of this delegation is in another trace (the wait request is its own).
    const elsewhere = spans.filter(
      (s) => s.attributes['baton.attempt_id'] === attemptId && traceId(s) !== traceId(request),
    )
    expect(elsewhere.map((s) => s.name)).toEqual([])

    expect(ancestry(trace, request, accept)).toEqual(['baton.accept', DELEGATE_ROUTE])
    expect(ancestry(trace, request, claim)).toEqual([
      'baton.claim',
      'baton.attempt',
      'baton.enqueue',
      DELEGATE_ROUTE,
    ])
    expect(ancestry(trace, request, run)).toEqual([
      'baton.run',
      'baton.attempt',
      'baton.enqueue',
      DELEGATE_ROUTE,
    ])
    expect(ancestry(trace, request, commit)).toEqual([
      'baton.commit',
      'baton.attempt',
      'baton.enqueue',
      DELEGATE_ROUTE,
    ])
    for (const s of [request, accept, enqueue]) expect(serviceOf(s)).toBe('baton-api')
    for (const s of [attempt, claim, run, commit]) expect(serviceOf(s)).toBe('baton-worker')
    expect(attempt.kind).toBe(SpanKind.CONSUMER)
    expect(enqueue.kind).toBe(SpanKind.PRODUCER)
    expect(claim.attributes['baton.outcome']).toBe('claimed')
    expect(run.attributes['baton.stop_reason']).toBe('completed')
    expect(commit.attributes).toMatchObject({
      'baton.outcome': 'committed',
      'baton.metadata.trace_id': 'caller-label-7',
    })

    // The job carried exactly the enqueue span's context, and nothing else but the attempt id.
    expect(jobData).toEqual({
      attemptId,
      traceparent: `00-${traceId(request)}-${spanId(enqueue)}-01`,
    })

    // Log lines written inside the request and inside the attempt carry their span's ids.
    const accepted_ = apiLog.lines.find(
      (l) => l.msg === 'delegation accepted' && l.attemptId === attemptId,
    )
    expect(accepted_).toMatchObject({ trace_id: traceId(request), span_id: spanId(request) })
    const claimed = workerLog.lines.find(
      (l) => l.msg === 'attempt claimed' && l.attemptId === attemptId,
    )
    expect(claimed).toMatchObject({ trace_id: traceId(request), span_id: spanId(attempt) })
    const committed = workerLog.lines.find(
      (l) => l.msg === 'terminal committed' && l.attemptId === attemptId,
    )
    expect(committed).toMatchObject({ trace_id: traceId(request), span_id: spanId(attempt) })
  },
)

tracedTest(
  'the trace reaches the worker only through the job data: a job without it starts a new trace',
  async ({ traced, redisUrl, queuePrefix }) => {
    const { exporter } = traced
    const api = await traced.api()
    const kept = (await api.post(delegate('s-strip'), { name: 'scripted', prompt: 'kept' })).body
      .attemptId as string
    const stripped = (await api.post(delegate('s-strip'), { name: 'scripted', prompt: 'stripped' }))
      .body.attemptId as string
    // Everything else stays as it is: same process, same exporter, same API.
    const queue = createAttemptQueue({ connection: { url: redisUrl }, prefix: queuePrefix })
    await (await queue.getJob(stripped))!.updateData({ attemptId: stripped })
    await queue.close()

    await traced.worker()
    await terminal(api, kept)
    await terminal(api, stripped)
    await untilWorkerDone(exporter, kept)
    await untilWorkerDone(exporter, stripped)
    const spans = exporter.getFinishedSpans()

    const keptEnqueue = attemptSpan(spans, 'baton.enqueue', kept)
    const keptAttempt = attemptSpan(spans, 'baton.attempt', kept)
    expect(traceId(keptAttempt)).toBe(traceId(keptEnqueue))
    expect(keptAttempt.parentSpanContext?.spanId).toBe(spanId(keptEnqueue))

    const strippedEnqueue = attemptSpan(spans, 'baton.enqueue', stripped)
    const strippedAttempt = attemptSpan(spans, 'baton.attempt', stripped)
    expect(strippedAttempt.parentSpanContext).toBeUndefined()
    expect(traceId(strippedAttempt)).not.toBe(traceId(strippedEnqueue))
    // Its own claim, run and commit still hang under it.
    for (const name of ['baton.claim', 'baton.run', 'baton.commit'])
      expect(attemptSpan(spans, name, stripped).parentSpanContext?.spanId).toBe(
        spanId(strippedAttempt),
      )
  },
)

tracedTest(
  'a batch submit is one request span, and every item’s job carries its trace',
  async ({ traced }) => {
    const { exporter } = traced
    const api = await traced.api()
    const answer = await api.post(`${delegate('s-batch-trace')}/batch`, {
      items: ['one', 'two', 'three'].map((output) => ({
        name: 'scripted',
        prompt: JSON.stringify({ output }),
      })),
    })
    expect(answer.status).toBe(200)
    const results = answer.body.results as { status: number; body: { attemptId: string } }[]
    expect(results.map((r) => r.status)).toEqual([202, 202, 202])
    const attemptIds = results.map((r) => r.body.attemptId)
    // Read while the jobs wait (a completed attempt job is removed at once), then run them.
    const jobData = await Promise.all(attemptIds.map((id) => traced.jobData(id)))
    await traced.worker()
    for (const attemptId of attemptIds) {
      await terminal(api, attemptId)
      await untilWorkerDone(exporter, attemptId)
    }

    const spans = exporter.getFinishedSpans()
    const requests = spans.filter((s) => s.name === BATCH_ROUTE)
    expect(requests).toHaveLength(1)
    const request = requests[0]!
    const trace = spans.filter((s) => traceId(s) === traceId(request))
    const enqueues = trace.filter((s) => s.name === 'baton.enqueue')
    expect(enqueues).toHaveLength(1)
    expect(enqueues[0]!.attributes['baton.items']).toBe(3)
    for (const [i, attemptId] of attemptIds.entries()) {
      expect(jobData[i]).toEqual({
        attemptId,
        traceparent: `00-${traceId(request)}-${spanId(enqueues[0]!)}-01`,
      })
      for (const name of ['baton.claim', 'baton.run', 'baton.commit'])
        expect(ancestry(trace, request, attemptSpan(trace, name, attemptId))).toEqual([
          name,
          'baton.attempt',
          'baton.enqueue',
          BATCH_ROUTE,
        ])
    }
  },
)

tracedTest(
  'with tracing off, jobs carry only the attempt id',
  async ({ traced, databaseUrl, redisUrl, queuePrefix, track }) => {
    const api = await startApi({ databaseUrl, redisUrl, queuePrefix })
    track(api.api)
    const one = await api.post(delegate('s-untraced'), { name: 'scripted', prompt: 'x' })
    const batch = await api.post(`${delegate('s-untraced')}/batch`, {
      items: [{ name: 'scripted', prompt: 'y' }],
    })
    // Even a caller's traceparent header is not carried: the API does not trace.
    const withHeader = await api.post(
      delegate('s-untraced'),
      { name: 'scripted', prompt: 'z' },
      { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    )
    for (const attemptId of [
      one.body.attemptId,
      batch.body.results[0].body.attemptId,
      withHeader.body.attemptId,
    ])
      expect(await traced.jobData(attemptId)).toEqual({ attemptId })
    await api.api.close()
  },
)
