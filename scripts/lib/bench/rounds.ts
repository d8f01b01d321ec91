// The bench's figures and their summary over rounds. In each round every system runs once, in
// turn, with fresh processes and a fresh database; this machine's speed moves by a quarter or more
// between minutes, so a ratio between two systems is taken within a round, between neighbours in
// time, and then its median over rounds — never a ratio of the two systems' medians.
import type { PhaseCost } from './counters.ts'
import type { SystemName } from './options.ts'
import { median, percentile, round, spread, type Spread } from './stats.ts'

/** Every figure the bench reports, per system, with its label in the table and its rounding. */
export const METRICS = {
  per_s: { label: 'throughput (delegations/s)', digits: 0 },
  wait_p50_ms: { label: 'submit-and-wait p50 (ms)', digits: 2 },
  wait_p99_ms: { label: 'submit-and-wait p99 (ms)', digits: 2 },
  cpu_ms_per_delegation: { label: 'CPU ms per delegation', digits: 3 },
  node_cpu_ms_per_delegation: { label: '  of which Node', digits: 3 },
  redis_cpu_ms_per_delegation: { label: '  of which Redis', digits: 3 },
  pg_cpu_ms_per_delegation: { label: '  of which Postgres', digits: 3 },
  redis_commands_per_delegation: { label: 'Redis commands per delegation', digits: 2 },
  pg_xacts_per_delegation: { label: 'Postgres transactions per delegation', digits: 3 },
  cancel_p50_ms: { label: 'cancel → aborted p50 (ms)', digits: 2 },
  cancel_p99_ms: { label: 'cancel → aborted p99 (ms)', digits: 2 },
  // A hosted parent's run start → its first continuation run's start (hosted-turns.ts).
  hosted_turn_p50_ms: { label: 'hosted turn p50 (ms)', digits: 2 },
  hosted_turn_p99_ms: { label: 'hosted turn p99 (ms)', digits: 2 },
  hosted_turns: { label: 'hosted turns (all rounds)', digits: 0 },
  // Baton's ledger audit: accepted and never terminal; decided or claimed twice.
  lost: { label: 'lost (all rounds)', digits: 0 },
  duplicates: { label: 'duplicates (all rounds)', digits: 0 },
} as const
export type Metric = keyof typeof METRICS
export type Figures = Partial<Record<Metric, number>>

/** Counts added up over the rounds; every other figure is summarized by its median. */
const SUMMED: ReadonlySet<Metric> = new Set(['lost', 'duplicates', 'hosted_turns'])

/** `figures` rounded as the catalog says. */
export function rounded(figures: Figures): Figures {
  return Object.fromEntries(
    Object.entries(figures).map(([metric, n]) => [
      metric,
      round(n, METRICS[metric as Metric].digits),
    ]),
  )
}

/** A throughput phase's cost per delegation (or per job). */
export function costFigures(cost: PhaseCost, count: number): Figures {
  const postgres = cost.postgresCpuMs ?? 0
  return {
    cpu_ms_per_delegation: (cost.nodeCpuMs + cost.redisCpuMs + postgres) / count,
    node_cpu_ms_per_delegation: cost.nodeCpuMs / count,
    redis_cpu_ms_per_delegation: cost.redisCpuMs / count,
    ...(cost.postgresCpuMs === undefined ? {} : { pg_cpu_ms_per_delegation: postgres / count }),
    redis_commands_per_delegation: cost.redisCommands / count,
  }
}

/** The p50 and p99 of ascending submit-and-wait latencies. */
export function waitFigures(latencies: readonly number[]): Figures {
  return { wait_p50_ms: percentile(latencies, 50), wait_p99_ms: percentile(latencies, 99) }
}

/** Baton divided by each other system, within a round. */
export const RATIOS = { baton_vs_naive: 'naive', baton_vs_raw: 'raw' } as const
export type RatioName = keyof typeof RATIOS

/** What a system measured in one round. */
export interface RoundFigures {
  readonly system: SystemName
  readonly round: number
  readonly figures: Figures
}

export interface Summary {
  readonly rounds: number
  /** Each system's median of each figure over the rounds (its sum, for the audit's counts). */
  readonly medians: Partial<Record<SystemName, Figures>>
  /** Per figure, Baton's divided by the other system's of the same round, over the rounds. */
  readonly ratios: Partial<Record<RatioName, Partial<Record<Metric, Spread>>>>
}

const metricsOf = (figures: Figures) => Object.keys(figures) as Metric[]

export function summarizeRounds(runs: readonly RoundFigures[]): Summary {
  const bySystem = new Map<SystemName, RoundFigures[]>()
  for (const run of runs) bySystem.set(run.system, [...(bySystem.get(run.system) ?? []), run])

  const medians: Partial<Record<SystemName, Figures>> = {}
  for (const [system, own] of bySystem) {
    const figures: Figures = {}
    for (const metric of new Set(own.flatMap((r) => metricsOf(r.figures)))) {
      const values = own.flatMap((r) => r.figures[metric] ?? [])
      const total = values.reduce((a, b) => a + b, 0)
      figures[metric] = round(SUMMED.has(metric) ? total : median(values), METRICS[metric].digits)
    }
    medians[system] = figures
  }

  const ratios: Summary['ratios'] = {}
  for (const [name, other] of Object.entries(RATIOS) as [RatioName, SystemName][]) {
    const perMetric = new Map<Metric, number[]>()
    for (const baton of bySystem.get('baton') ?? []) {
      const them = bySystem.get(other)?.find((r) => r.round === baton.round)
      for (const metric of metricsOf(baton.figures)) {
        const [mine, theirs] = [baton.figures[metric], them?.figures[metric]]
        if (mine === undefined || !theirs || SUMMED.has(metric)) continue
        perMetric.set(metric, [...(perMetric.get(metric) ?? []), mine / theirs])
      }
    }
    if (perMetric.size > 0)
      ratios[name] = Object.fromEntries(
        [...perMetric].map(([metric, values]) => [metric, spread(values, 2)]),
      )
  }

  return { rounds: Math.max(0, ...runs.map((r) => r.round)), medians, ratios }
}
