// `npm run up` on a terminal shows the apps' JSON log lines the way a person reads them; anywhere
// else (piped, CI, files) the lines stay JSON, for machines.

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
}

/** Fields every line carries that the prefix already says, or that only machines need. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service'])

/**
 * One pino JSON line as `12:00:01.123 INFO  message key=value …` (an error's message and its
 * first stack frame included); any other line is returned unchanged.
 */
export function prettyLogLine(line: string): string {
  if (!line.startsWith('{')) return line
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line
  }
  if (typeof entry.level !== 'number' || typeof entry.msg !== 'string') return line
  // Baton's loggers write ISO times; pino's default is epoch milliseconds.
  const at =
    typeof entry.time === 'string' || typeof entry.time === 'number'
      ? new Date(entry.time)
      : undefined
  const time = at === undefined || Number.isNaN(at.getTime()) ? '' : at.toISOString().slice(11, 23)
  const fields = Object.entries(entry)
    .filter(([key]) => !OMITTED.has(key))
    .map(([key, value]) => `${key}=${renderValue(value)}`)
  const level = LEVELS[entry.level] ?? String(entry.level)
  return [time, level, entry.msg, ...fields].filter((part) => part !== '').join(' ')
}

function renderValue(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value
  if (value !== null && typeof value === 'object' && 'message' in value) {
    const error = value as { type?: unknown; message?: unknown; stack?: unknown }
    const type = typeof error.type === 'string' ? error.type : 'Error'
    const message = typeof error.message === 'string' ? error.message : ''
    const frame = typeof error.stack === 'string' ? error.stack.split('\n')[1]?.trim() : undefined
    return JSON.stringify(`${type}: ${message}${frame === undefined ? '' : ` ${frame}`}`)
  }
  return JSON.stringify(value)
}
