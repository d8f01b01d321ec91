// CPU time of processes from Linux's /proc, for the bench's cost per delegation. Process CPU is the
// only figure that covers Redis and Postgres as well as Node: each system is charged for every
// process it needs, whichever of them does the work.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** The fields of `/proc/<pid>/stat` the bench uses; times in clock ticks. */
export interface ProcStat {
  readonly pid: number
  readonly comm: string
  readonly ppid: number
  readonly utime: number
  readonly stime: number
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
  return {
    pid: Number(line.slice(0, open).trim()),
    comm: line.slice(open + 1, close),
    ppid: field(4),
    utime: field(14),
    stime: field(15),
  }
}

/** The stat of `pid`, or undefined when it has exited. */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

/** Every live process on this machine. */
export function allProcStats(): ProcStat[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => readProcStat(Number(entry)) ?? [])
}

let ticksPerSecond: number | undefined
/** `getconf CLK_TCK`: the unit of every time in /proc stat. */
export function clockTicksPerSecond(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())
  return ticksPerSecond
}

/** User plus system time of one process (its threads included, its children not). */
export function cpuTicks(stat: ProcStat): number {
  return stat.utime + stat.stime
}

/**
 * The CPU ticks of each process of one Postgres server, by pid: the postmaster and its live
 * children. Other clusters on the machine are not included.
 */
export function postgresServerTicks(
  postmasterPid: number,
  stats = allProcStats(),
): Map<number, number> {
  return new Map(
    stats
      .filter((s) => s.pid === postmasterPid || s.ppid === postmasterPid)
      .map((s) => [s.pid, cpuTicks(s)]),
  )
}

/** The CPU ticks of a fixed set of processes; one that has exited counts as zero. */
export function processTicks(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => {
    const stat = readProcStat(pid)
    return sum + (stat === undefined ? 0 : cpuTicks(stat))
  }, 0)
}

export const ticksToMs = (ticks: number): number => (ticks * 1000) / clockTicksPerSecond()

/** The machine's CPU time in clock ticks, all cores together, from the first line of /proc/stat. */
export interface MachineTicks {
  /** Time any core spent running anything: user, nice, system, irq and softirq. */
  readonly busy: number
  /** Time the cores had: busy plus idle and I/O wait (a virtual machine's stolen time excluded). */
  readonly total: number
}

/** Parses the `cpu  user nice system idle iowait irq softirq steal …` line of /proc/stat. */
export function parseMachineStat(text: string): MachineTicks {
  const line = text.split('\n').find((l) => l.startsWith('cpu '))
  const fields = line?.trim().split(/\s+/).slice(1, 8).map(Number) ?? []
  if (fields.length < 7 || fields.some((n) => !Number.isFinite(n))) {
    throw new Error(`no cpu line in /proc/stat: ${text.slice(0, 80)}`)
  }
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0] = fields
  const busy = user + nice + system + irq + softirq
  return { busy, total: busy + idle + iowait }
}

export function readMachineTicks(): MachineTicks {
  return parseMachineStat(readFileSync('/proc/stat', 'utf8'))
}
