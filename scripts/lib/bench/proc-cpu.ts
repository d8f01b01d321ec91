// CPU time of processes from Linux's /proc, for the bench's cost per delegation. Process CPU is the
// only figure that covers Redis and Postgres as well as Node: each system is charged for every
// process it needs, whichever of them does the work.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** What the bench reads of `/proc/<pid>/stat`: the parent, and user plus system time in ticks. */
export interface ProcStat {
  readonly pid: number
  readonly ppid: number
  /** Its threads included, its children not. */
  readonly ticks: number
}

/**
 * Parses one `/proc/<pid>/stat` line. The command sits in parentheses and may itself contain spaces
 * and parentheses, so the fields are counted from the last `)`.
 */
export function parseProcStat(line: string): ProcStat {
  const open = line.indexOf('(')
  const close = line.lastIndexOf(')')
  if (open < 0 || close < open) throw new Error(`not a /proc stat line: ${line.slice(0, 80)}`)
  // After the command: field 3 (state) is rest[0], so field n is rest[n - 3].
  const rest = line
    .slice(close + 2)
    .trim()
    .split(/\s+/)
  const field = (n: number): number => {
    const value = Number(rest[n - 3])
    if (!Number.isFinite(value)) throw new Error(`/proc stat field ${n} missing: ${line}`)
    return value
  }
  return { pid: Number(line.slice(0, open)), ppid: field(4), ticks: field(14) + field(15) }
}

/** The stat of `pid`, or undefined when it has exited. */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

/**
 * The CPU ticks of each process of one Postgres server, by pid: the postmaster and its live
 * children (`stats`: every process on this machine). Other clusters are not included.
 */
export function postgresServerTicks(
  postmasterPid: number,
  stats = readdirSync('/proc').flatMap((entry) =>
    /^\d+$/.test(entry) ? (readProcStat(Number(entry)) ?? []) : [],
  ),
): Map<number, number> {
  return new Map(
    stats
      .filter((s) => s.pid === postmasterPid || s.ppid === postmasterPid)
      .map((s) => [s.pid, s.ticks]),
  )
}

/** The CPU ticks of a fixed set of processes; one that has exited counts as zero. */
export function processTicks(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (readProcStat(pid)?.ticks ?? 0), 0)
}

let ticksPerSecond: number | undefined
export function ticksToMs(ticks: number): number {
  // `getconf CLK_TCK`: the unit of every time in /proc stat.
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())
  return (ticks * 1000) / ticksPerSecond
}
