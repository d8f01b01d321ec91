// The bench's command line: the sizes of one run and which systems it measures.
import { parseArgs } from 'node:util'

/** Raw BullMQ, the hand-rolled service and Baton, in the order a round runs them. */
export const SYSTEMS = ['raw', 'naive', 'baton'] as const
export type SystemName = (typeof SYSTEMS)[number]

/** What each option means: docs/performance.md. */
export interface BenchOptions {
  readonly count: number
  readonly clients: number
  readonly sequential: number
  /** Hosted turns Baton times after its cancels (hosted-turns.ts). */
  readonly hostedTurns: number
  readonly workers: number
  readonly rounds: number
  readonly systems: readonly SystemName[]
  readonly json: boolean
}

function integer(name: string, value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1`)
  return n
}

export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      count: { type: 'string', default: '20000' },
      clients: { type: 'string', default: '64' },
      sequential: { type: 'string', default: '300' },
      'hosted-turns': { type: 'string', default: '100' },
      workers: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '3' },
      systems: { type: 'string', default: SYSTEMS.join(',') },
      json: { type: 'boolean', default: false },
    },
  })
  const picked = values.systems.split(',')
  for (const name of picked) {
    if (!(SYSTEMS as readonly string[]).includes(name))
      throw new Error(`--systems takes some of ${SYSTEMS.join(',')}; got "${name}"`)
  }
  return {
    count: integer('count', values.count),
    clients: integer('clients', values.clients),
    sequential: integer('sequential', values.sequential),
    hostedTurns: integer('hosted-turns', values['hosted-turns']),
    workers: integer('workers', values.workers),
    rounds: integer('rounds', values.rounds),
    // In round order, whatever order they were named in.
    systems: SYSTEMS.filter((name) => picked.includes(name)),
    json: values.json,
  }
}

/**
 * What `--scale` measures: children running at once, open waits, history in the ledger, and a
 * retention drain of expired history under load.
 */
export const SCALE_DIMENSIONS = ['concurrency', 'waits', 'history', 'retention'] as const
export type ScaleDimension = (typeof SCALE_DIMENSIONS)[number]

/** What each option means: docs/performance.md, "Cost as the work grows". */
export interface ScaleOptions {
  readonly dimensions: readonly ScaleDimension[]
  /** Children running at once (concurrency) and open waits (waits), one level after another. */
  readonly levels: readonly number[]
  /** Terminal attempts in the ledger before each history level is measured (0 allowed). */
  readonly history: readonly number[]
  /** Expired terminal attempts the retention dimension has the reconcilers remove. */
  readonly retention: number
  readonly workers: number
  /** How long each concurrency level is held while its costs are sampled. */
  readonly holdMs: number
  /** Children cancelled at once at each concurrency level, for cancel → aborted. */
  readonly cancels: number
  /** Submit-and-waits timed at each history level. */
  readonly sequential: number
  readonly json: boolean
}

function integerList(name: string, value: string, min: number): number[] {
  const list = value.split(',').map((word) => {
    const n = Number(word)
    if (word === '' || !Number.isInteger(n) || n < min)
      throw new Error(`--${name} takes whole numbers ≥ ${min}, comma-separated; got "${word}"`)
    return n
  })
  // Ascending and once each: a level builds on the one before it.
  return [...new Set(list)].sort((a, b) => a - b)
}

export function parseScaleOptions(argv: readonly string[]): ScaleOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      scale: { type: 'boolean', default: true },
      dimensions: { type: 'string', default: SCALE_DIMENSIONS.join(',') },
      levels: { type: 'string', default: '1000,5000,10000' },
      history: { type: 'string', default: '0,1000000,10000000' },
      retention: { type: 'string', default: '1000000' },
      workers: { type: 'string', default: '2' },
      'hold-ms': { type: 'string', default: '10000' },
      cancels: { type: 'string', default: '100' },
      sequential: { type: 'string', default: '500' },
      json: { type: 'boolean', default: false },
    },
  })
  const picked = values.dimensions.split(',')
  for (const name of picked) {
    if (!(SCALE_DIMENSIONS as readonly string[]).includes(name))
      throw new Error(`--dimensions takes some of ${SCALE_DIMENSIONS.join(',')}; got "${name}"`)
  }
  return {
    dimensions: SCALE_DIMENSIONS.filter((name) => picked.includes(name)),
    levels: integerList('levels', values.levels, 1),
    history: integerList('history', values.history, 0),
    retention: integer('retention', values.retention),
    workers: integer('workers', values.workers),
    holdMs: integer('hold-ms', values['hold-ms']),
    cancels: integer('cancels', values.cancels),
    sequential: integer('sequential', values.sequential),
    json: values.json,
  }
}

/** The bench's command line: `--scale` picks the growth bench, anything else the comparison. */
export type BenchCommand =
  | { readonly kind: 'compare'; readonly options: BenchOptions }
  | { readonly kind: 'scale'; readonly options: ScaleOptions }

export function parseBenchCommand(argv: readonly string[]): BenchCommand {
  return argv.includes('--scale')
    ? { kind: 'scale', options: parseScaleOptions(argv) }
    : { kind: 'compare', options: parseBenchOptions(argv) }
}
