// What the growth bench does to find where a cancel burst's time goes: its apps' CPU profiles and
// the burst's stages read from the ledger's own times. Both are off unless asked for.
import { percentile } from './stats.ts'

/**
 * `BENCH_CPU_PROFILE_DIR` makes the API and the workers write a V8 CPU profile there as they exit
 * (`--cpu-prof`), to find where a figure's time goes; the bench itself is not profiled. Unset, the
 * apps start as always.
 */
export const CPU_PROFILE_DIR_VAR = 'BENCH_CPU_PROFILE_DIR'

/** What the apps' environment gets for `env`'s profiling switch (nothing when it is off). */
export function profileEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const dir = env[CPU_PROFILE_DIR_VAR]
  if (dir === undefined || dir === '') return {}
  const inherited = env.NODE_OPTIONS ?? ''
  return { NODE_OPTIONS: `${inherited} --cpu-prof --cpu-prof-dir=${dir}`.trim() }
}

/** One cancelled attempt's ledger times (epoch ms): its cancel recorded, its terminal committed. */
export interface BurstLedgerTimes {
  readonly id: string
  readonly requested: number
  readonly ended: number
}

/**
 * A burst's stages, p50 and p99 in ms: cancel sent → request recorded → terminal committed →
 * wait answered, over the attempts with all four times.
 */
export function burstStageFigures(
  rows: readonly BurstLedgerTimes[],
  sentAt: ReadonlyMap<string, number>,
  answeredAt: ReadonlyMap<string, number>,
): Record<string, number> {
  const stages = {
    sent_to_recorded: [] as number[],
    recorded_to_terminal: [] as number[],
    terminal_to_answer: [] as number[],
  }
  for (const r of rows) {
    const sent = sentAt.get(r.id)
    const answered = answeredAt.get(r.id)
    if (sent === undefined || answered === undefined) continue
    stages.sent_to_recorded.push(r.requested - sent)
    stages.recorded_to_terminal.push(r.ended - r.requested)
    stages.terminal_to_answer.push(answered - r.ended)
  }
  const figures: Record<string, number> = {}
  for (const [name, ms] of Object.entries(stages)) {
    ms.sort((a, b) => a - b)
    for (const q of [50, 99]) figures[`${name}_p${q}_ms`] = Math.round(percentile(ms, q) * 10) / 10
  }
  return figures
}

/** What a V8 `.cpuprofile` holds that a summary reads. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number
    readonly callFrame: {
      readonly functionName: string
      readonly url: string
      readonly lineNumber: number
    }
    readonly children?: readonly number[]
  }[]
  readonly startTime: number
  readonly endTime: number
  readonly samples: readonly number[]
  readonly timeDeltas: readonly number[]
}

export interface ProfileSummary {
  /** Sampled time in the window, ms: idle (waiting for I/O or timers) and not. */
  readonly sampledMs: number
  readonly idleMs: number
  /**
   * By function (`name file:line`), ms, most first: `self` where it was the running frame,
   * `inclusive` where it was anywhere on the stack. A sample's time is wall time: on a machine
   * short of cores it includes time the process waited for one.
   */
  readonly self: readonly (readonly [string, number])[]
  readonly inclusive: readonly (readonly [string, number])[]
}

/**
 * Where a process's time went between `fromUs` and `toUs` (the profile's clock: the monotonic one,
 * in µs), the `top` functions of each list.
 */
export function summariseProfile(
  profile: CpuProfile,
  window: { readonly fromUs?: number; readonly toUs?: number; readonly top?: number } = {},
): ProfileSummary {
  const { fromUs = -Infinity, toUs = Infinity, top = 25 } = window
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parentOf = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id)
  const label = (id: number): string => {
    const f = byId.get(id)?.callFrame
    if (f === undefined) return '(unknown)'
    const file = f.url
      .replace(/^.*\/node_modules\//, '')
      .replace(/^file:\/\/.*?\/(apps|libs)\//, '$1/')
    return `${f.functionName === '' ? '(anonymous)' : f.functionName} ${file}:${f.lineNumber + 1}`
  }
  const self = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let at = profile.startTime
  let sampled = 0
  let idle = 0
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0
    // A sample lasts until the next one is taken.
    const us = profile.timeDeltas[i + 1] ?? 0
    if (at < fromUs || at > toUs) return
    sampled += us
    if (byId.get(id)?.callFrame.functionName === '(idle)') {
      idle += us
      return
    }
    self.set(label(id), (self.get(label(id)) ?? 0) + us)
    const seen = new Set<string>()
    for (let frame: number | undefined = id; frame !== undefined; frame = parentOf.get(frame)) {
      const name = label(frame)
      // A recursive function counts once per sample.
      if (!seen.has(name)) inclusive.set(name, (inclusive.get(name) ?? 0) + us)
      seen.add(name)
    }
  })
  const ranked = (m: Map<string, number>) =>
    [...m]
      // Ties by name, so a summary reads the same every time.
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, top)
      .map(([name, us]) => [name, Math.round(us / 100) / 10] as const)
  return {
    sampledMs: Math.round(sampled / 1000),
    idleMs: Math.round(idle / 1000),
    self: ranked(self),
    inclusive: ranked(inclusive),
  }
}
