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
