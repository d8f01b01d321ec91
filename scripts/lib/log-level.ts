// The apps say they are ready in an `info` line (`api ready`, `worker ready`), which the launcher
// waits for. Asked for a quieter LOG_LEVEL, a launched app would never say it and the launch would
// time out; so the app runs at `info` all the same, and the echo of its output leaves out the lines
// below the level asked for.

/** pino's levels: a line below the threshold asked for is not written. */
const THRESHOLDS: Readonly<Record<string, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
}

export interface LaunchLogging {
  /** LOG_LEVEL for the launched app (`undefined`: as it is). */
  readonly level: string | undefined
  /** Whether an output line of the app is echoed: every line that is not a pino line is. */
  readonly echoes: (line: string) => boolean
}

/**
 * How to launch an app asked for `requested` (LOG_LEVEL). Unknown values are passed on as they
 * are: the app refuses them at start with a message that names the variable.
 */
export function launchLogging(requested: string | undefined): LaunchLogging {
  const threshold = requested === undefined ? undefined : THRESHOLDS[requested]
  if (threshold === undefined || threshold <= (THRESHOLDS.info ?? 30)) {
    return { level: requested, echoes: () => true }
  }
  return {
    level: 'info',
    echoes: (line) => {
      const level = pinoLevel(line)
      return level === undefined || level >= threshold
    },
  }
}

function pinoLevel(line: string): number | undefined {
  if (!line.startsWith('{')) return undefined
  try {
    const level = (JSON.parse(line) as { level?: unknown }).level
    return typeof level === 'number' ? level : undefined
  } catch {
    return undefined
  }
}
