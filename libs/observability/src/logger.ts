import { pino, type Logger, type LoggerOptions } from 'pino'
import { traceFields } from './trace-fields.ts'

export type { Logger }

export interface CreateLoggerOptions {
  readonly service: string
  readonly level?: string
  /** Where to write; defaults to stdout. Tests pass a sink to keep output quiet. */
  readonly destination?: NodeJS.WritableStream
}

/**
 * Paths that may carry secrets or a caller's text; redacted wherever they appear in a log record.
 * Baton logs ids and categories, never prompts or steering text: these are the net under that rule.
 */
const REDACT_PATHS = [
  'prompt',
  '*.prompt',
  'content',
  '*.content',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'password',
  '*.password',
  'connectionString',
  '*.connectionString',
]

/**
 * The one way Baton builds a logger: `base: { service }`, redaction, ISO timestamps, and the
 * active span's ids. Messages are constant strings; ids travel in fields (`{ attemptId }`), and
 * child loggers carry component ids.
 */
export function createLogger(options: CreateLoggerOptions): Logger {
  const config: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // `trace_id` and `span_id` of the active span, when tracing is on and one is active.
    mixin: traceFields,
  }
  return options.destination === undefined
    ? pino(config)
    : pino(config, options.destination as pino.DestinationStream)
}
