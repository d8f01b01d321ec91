import { describe, expect, it } from 'vitest'
import { parseProcStat, postgresServerTicks } from './proc-cpu.ts'

/** A /proc stat line with the given command, parent and times (utime stime cutime cstime). */
const statLine = (pid: number, comm: string, ppid: number, times: readonly number[]): string =>
  `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 4194304 497226 19244165 0 5 ${times.join(' ')} 20 0 1 0 3939 222445568 7351`

describe('parseProcStat', () => {
  it('reads the parent and the CPU times counted from the last parenthesis of the command', () => {
    const stat = parseProcStat(statLine(2189, 'post (gres) x', 1, [181, 1676, 14192, 10439]))
    expect(stat).toEqual({ pid: 2189, ppid: 1, ticks: 181 + 1676 })
  })

  it('refuses a line that is not a stat line', () => {
    expect(() => parseProcStat('no such thing')).toThrow(/not a \/proc stat line/)
    expect(() => parseProcStat('12 (node) S 1 2')).toThrow(/field 14 missing/)
  })
})

describe('postgresServerTicks', () => {
  it('gives user plus system time of the postmaster and its live children, nothing else', () => {
    const stats = [
      parseProcStat(statLine(100, 'postgres', 1, [10, 20, 1000, 2000])),
      parseProcStat(statLine(101, 'postgres', 100, [3, 4, 50, 60])),
      parseProcStat(statLine(102, 'postgres', 100, [5, 6, 0, 0])),
      // Another cluster on the same machine, and an unrelated process.
      parseProcStat(statLine(200, 'postgres', 1, [7000, 7000, 7000, 7000])),
      parseProcStat(statLine(201, 'postgres', 200, [9000, 9000, 0, 0])),
      parseProcStat(statLine(300, 'node', 1, [8000, 8000, 0, 0])),
    ]
    expect(postgresServerTicks(100, stats)).toEqual(
      new Map([
        [100, 30],
        [101, 7],
        [102, 11],
      ]),
    )
  })
})
