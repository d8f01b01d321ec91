// OTLP smoke: with OTEL_EXPORTER_OTLP_ENDPOINT set, a delegation's spans leave the API and worker
// processes as OTLP/HTTP JSON, and arrive at /v1/traces.
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, test } from '@baton/testing'
import { delegate } from './support/api-harness.ts'

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes?: { key: string; value: { stringValue?: string } }[]
}

interface ReceivedSpan extends OtlpSpan {
  readonly service: string | undefined
}

/**
 * A protocol fake of an OpenTelemetry collector's OTLP/HTTP receiver: it accepts JSON exports at
 * `/v1/traces`, answers an empty success, and keeps what it received. Nothing else.
 */
async function fakeCollector(): Promise<{
  readonly endpoint: string
  readonly requests: { path: string; contentType: string | undefined; bytes: number }[]
  readonly spans: ReceivedSpan[]
  close(): Promise<void>
  isClosed(): boolean
}> {
  const requests: { path: string; contentType: string | undefined; bytes: number }[] = []
  const spans: ReceivedSpan[] = []
  let closed = false
  const server: Server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      requests.push({
        path: request.url ?? '',
        contentType: request.headers['content-type'],
        bytes: body.length,
      })
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end()
        return
      }
      const exported = JSON.parse(body.toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] }
          scopeSpans: { spans: OtlpSpan[] }[]
        }[]
      }
      for (const { resource, scopeSpans } of exported.resourceSpans) {
        const service = resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue
        for (const scope of scopeSpans)
          for (const span of scope.spans) spans.push({ ...span, service })
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    spans,
    isClosed: () => closed,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      closed = true
    },
  }
}

const attributeOf = (span: OtlpSpan, key: string) =>
  span.attributes?.find((a) => a.key === key)?.value.stringValue

describe('OTLP export', () => {
  test("a delegation's spans from the API and a worker process arrive at /v1/traces as one trace", async ({
    baton,
    track,
  }) => {
    const collector = track(await fakeCollector())
    const api = await baton({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint } })
    const answer = await api.post(delegate('s-otlp'), {
      name: 'scripted',
      prompt: '{"output":"exported"}',
      wait: { timeoutMs: 10_000 },
    })
    expect(answer.body).toMatchObject({ status: 'terminal', stopReason: 'completed' })
    const { attemptId } = answer.body
    // Both processes flush what their batch span processors still hold when they stop.
    await api.close()

    expect(collector.requests.length).toBeGreaterThanOrEqual(2)
    for (const request of collector.requests) {
      expect(request.path).toBe('/v1/traces')
      expect(request.contentType).toBe('application/json')
      expect(request.bytes).toBeGreaterThan(0)
    }
    const request = collector.spans.find(
      (s) => s.name === 'POST /v1/sessions/:sessionId/delegations',
    )
    expect(request?.service).toBe('baton-api')
    const trace = collector.spans.filter((s) => s.traceId === request?.traceId)
    expect(trace.map((s) => `${s.service} ${s.name}`).sort()).toEqual(
      [
        'baton-api POST /v1/sessions/:sessionId/delegations',
        'baton-api baton.accept',
        'baton-api baton.enqueue',
        'baton-worker baton.attempt',
        'baton-worker baton.claim',
        'baton-worker baton.run',
        'baton-worker baton.commit',
      ].sort(),
    )
    const enqueue = trace.find((s) => s.name === 'baton.enqueue')
    const attempt = trace.find((s) => s.name === 'baton.attempt')
    expect(attempt?.parentSpanId).toBe(enqueue?.spanId)
    for (const span of trace.filter((s) => s !== request))
      expect(attributeOf(span, 'baton.attempt_id')).toBe(attemptId)
    await collector.close()
  })
})
