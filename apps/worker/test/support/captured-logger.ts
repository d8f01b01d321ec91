import { Writable } from 'node:stream'
import { createLogger, type Logger } from '@baton/observability'

/** A logger at info whose lines the test reads, parsed, in the order they were written. */
export function capturedLogger(): {
  readonly logger: Logger
  readonly lines: Record<string, unknown>[]
} {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n'))
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: createLogger({ service: 'test', level: 'info', destination }), lines }
}
