import { PassThrough } from 'node:stream'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace'
import { describe, expect, test } from 'vitest'
import { z } from 'zod'
import { createLogger } from './logger.ts'
import { DISABLED_TRACING, SpanKind, createTracing } from './tracing.ts'
import { tracingConfig, tracingEnvShape } from './tracing-config.ts'

const parse = (env: Record<string, string>) => tracingConfig(z.object(tracingEnvShape).parse(env))

function inMemoryTracing(service = 'test') {
  const exporter = new InMemorySpanExporter()
  const tracing = createTracing({
    service,
    config: { otlp: undefined, serviceName: undefined },
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  })
  return { tracing, exporter }
}

describe('tracingConfig', () => {
  test('off unless an OTLP endpoint (or the otlp exporter) is configured', () => {
    expect(parse({}).otlp).toBeUndefined()
    // Compose passes `${OTEL_…:-}`: empty values are unset.
    expect(parse({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: '' })).toEqual({
      otlp: undefined,
      serviceName: undefined,
    })
    expect(parse({ OTEL_SERVICE_NAME: 'api-eu' })).toEqual({
      otlp: undefined,
      serviceName: 'api-eu',
    })
  })

  test('the base endpoint gets /v1/traces; the traces endpoint is used as given', () => {
    expect(parse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).otlp?.url).toBe(
      'http://collector:4318/v1/traces',
    )
    expect(
      parse({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/ingest',
      }).otlp?.url,
    ).toBe('https://traces.example/ingest')
    expect(parse({ OTEL_TRACES_EXPORTER: 'otlp' }).otlp?.url).toBe(
      'http://localhost:4318/v1/traces',
    )
  })

  test('OTEL_SDK_DISABLED=true (any case) and OTEL_TRACES_EXPORTER=none turn it off', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
    expect(parse({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }).otlp).toBeUndefined()
    expect(parse({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).otlp).toBeUndefined()
    expect(parse({ ...endpoint, OTEL_SDK_DISABLED: 'false' }).otlp).toBeDefined()
  })

  test('headers are key=value pairs, percent-decoded; anything else is refused', () => {
    expect(
      parse({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=baton, authorization=Bearer%20abc',
      }).otlp?.headers,
    ).toEqual({ 'x-tenant': 'baton', authorization: 'Bearer abc' })
    const schema = z.object(tracingEnvShape)
    for (const bad of [
      { OTEL_EXPORTER_OTLP_HEADERS: 'novalue' },
      { OTEL_EXPORTER_OTLP_HEADERS: 'a=1,,b=2' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector' },
      { OTEL_TRACES_EXPORTER: 'zipkin' },
    ])
      expect(schema.safeParse(bad).success, JSON.stringify(bad)).toBe(false)
  })
})

describe('createTracing', () => {
  test('off: the no-op, no carrier, and fn runs as it is', async () => {
    const tracing = createTracing({
      service: 'test',
      config: { otlp: undefined, serviceName: undefined },
    })
    expect(tracing).toBe(DISABLED_TRACING)
    expect(tracing.enabled).toBe(false)
    const answer = await tracing.inSpan('x', {}, async (span) => {
      expect(span.isRecording()).toBe(false)
      return tracing.carrier()
    })
    expect(answer).toBeUndefined()
  })

  test('spans nest under the active span; the carrier names the active span', async () => {
    const { tracing, exporter } = inMemoryTracing()
    let carrier: ReturnType<typeof tracing.carrier>
    await tracing.inSpan('outer', { kind: SpanKind.SERVER }, async () => {
      await tracing.inSpan('inner', {}, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        carrier = tracing.carrier()
      })
    })
    expect(tracing.carrier()).toBeUndefined()
    const [inner, outer] = exporter.getFinishedSpans()
    expect(outer?.name).toBe('outer')
    expect(inner?.name).toBe('inner')
    expect(inner?.spanContext().traceId).toBe(outer?.spanContext().traceId)
    expect(inner?.parentSpanContext?.spanId).toBe(outer?.spanContext().spanId)
    expect(outer?.parentSpanContext).toBeUndefined()
    expect(carrier).toEqual({
      traceparent: `00-${inner?.spanContext().traceId}-${inner?.spanContext().spanId}-01`,
    })
    expect(outer?.resource.attributes['service.name']).toBe('test')
    await tracing.shutdown()
  })

  test('a remote parent continues its trace; a malformed one starts a new trace', async () => {
    const { tracing, exporter } = inMemoryTracing()
    const traceId = '0af7651916cd43dd8448eb211c80319c'
    const parentId = 'b7ad6b7169203331'
    await tracing.inSpan(
      'continued',
      { remoteParent: { traceparent: `00-${traceId}-${parentId}-01`, attemptId: 'x' } },
      async () => undefined,
    )
    await tracing.inSpan('fresh', { remoteParent: { traceparent: 'nonsense' } }, async () => 1)
    const [continued, fresh] = exporter.getFinishedSpans()
    expect(continued?.spanContext().traceId).toBe(traceId)
    expect(continued?.parentSpanContext?.spanId).toBe(parentId)
    expect(fresh?.spanContext().traceId).not.toBe(traceId)
    expect(fresh?.parentSpanContext).toBeUndefined()
    await tracing.shutdown()
  })

  test('a throw ends the span with an error status naming only the class', async () => {
    const { tracing, exporter } = inMemoryTracing()
    await expect(
      tracing.inSpan('fails', {}, async () => {
        throw new TypeError('secret prompt text')
      }),
    ).rejects.toThrow(TypeError)
    const [span] = exporter.getFinishedSpans()
    expect(span?.status).toEqual({ code: 2, message: 'TypeError' })
    expect(span?.ended).toBe(true)
    await tracing.shutdown()
  })
})

describe('log lines', () => {
  test('carry trace_id and span_id of the active span, and nothing outside one', async () => {
    const { tracing, exporter } = inMemoryTracing()
    const sink = new PassThrough()
    const lines: Record<string, unknown>[] = []
    sink.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
    })
    const logger = createLogger({ service: 'test', destination: sink })
    logger.info('before')
    await tracing.inSpan('work', {}, async () => {
      await Promise.resolve()
      logger.child({ component: 'c' }).info({ attemptId: 'a' }, 'inside')
    })
    await new Promise((resolve) => setImmediate(resolve))
    const [span] = exporter.getFinishedSpans()
    const [before, inside] = lines
    expect(before).not.toHaveProperty('trace_id')
    expect(before).not.toHaveProperty('span_id')
    expect(inside).toMatchObject({
      msg: 'inside',
      attemptId: 'a',
      trace_id: span?.spanContext().traceId,
      span_id: span?.spanContext().spanId,
    })
    await tracing.shutdown()
  })
})
