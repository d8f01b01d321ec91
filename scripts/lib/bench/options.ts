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
    workers: integer('workers', values.workers),
    rounds: integer('rounds', values.rounds),
    // In round order, whatever order they were named in.
    systems: SYSTEMS.filter((name) => picked.includes(name)),
    json: values.json,
  }
}
