import { parseKeyPairsIntoRecord } from '@opentelemetry/core'
import { z } from 'zod'

/** Compose passes `${OTEL_…:-}`: an empty value counts as unset. */
const unsetWhenBlank = (value: unknown): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value

const httpUrl = z.url({ protocol: /^https?$/, error: 'an http(s) URL' })

/**
 * The standard OpenTelemetry variables Baton reads (a subset; see the README's Traces section).
 * Each app spreads this shape into its own config schema, so they appear in its
 * `*_CONFIG_VARIABLES` and are parsed with its other variables.
 */
export const tracingEnvShape = {
  OTEL_SDK_DISABLED: z.preprocess(
    (value) => (typeof value === 'string' ? unsetWhenBlank(value.toLowerCase()) : value),
    z.enum(['true', 'false']).optional(),
  ),
  OTEL_TRACES_EXPORTER: z.preprocess(unsetWhenBlank, z.enum(['otlp', 'none']).optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(unsetWhenBlank, httpUrl.optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.preprocess(unsetWhenBlank, httpUrl.optional()),
  OTEL_EXPORTER_OTLP_HEADERS: z.preprocess(
    unsetWhenBlank,
    z
      .string()
      .refine(
        (value) =>
          value.split(',').every((pair) => Object.keys(parseKeyPairsIntoRecord(pair)).length === 1),
        'comma-separated key=value pairs (values percent-encoded)',
      )
      .optional(),
  ),
  OTEL_SERVICE_NAME: z.preprocess(unsetWhenBlank, z.string().min(1).max(256).optional()),
}

export type TracingEnv = z.infer<z.ZodObject<typeof tracingEnvShape>>

/** Where a process sends its spans; `otlp` undefined means tracing is off. */
export interface TracingConfig {
  /** OTLP/HTTP (JSON) traces endpoint and the headers every export carries. */
  readonly otlp:
    { readonly url: string; readonly headers: Readonly<Record<string, string>> } | undefined
  /** `service.name` of this process's spans; undefined: the app's own name. */
  readonly serviceName: string | undefined
}

/** Where `OTEL_TRACES_EXPORTER=otlp` sends spans when no endpoint is given (the spec's default). */
const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318'

/**
 * Tracing is on when an OTLP endpoint is configured (or `OTEL_TRACES_EXPORTER=otlp` asks for the
 * default one), and off when nothing is set, `OTEL_TRACES_EXPORTER=none` or
 * `OTEL_SDK_DISABLED=true`. The traces endpoint is used as given; the base endpoint gets
 * `/v1/traces` appended, as the specification says.
 */
export function tracingConfig(env: TracingEnv): TracingConfig {
  const serviceName = env.OTEL_SERVICE_NAME
  const off = { otlp: undefined, serviceName }
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return off
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT
  const url =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (base !== undefined
      ? tracesUrl(base)
      : env.OTEL_TRACES_EXPORTER === 'otlp'
        ? tracesUrl(DEFAULT_OTLP_ENDPOINT)
        : undefined)
  if (url === undefined) return off
  const headers = parseKeyPairsIntoRecord(env.OTEL_EXPORTER_OTLP_HEADERS)
  return { otlp: { url, headers }, serviceName }
}

function tracesUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`
}
