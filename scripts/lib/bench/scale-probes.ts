// What the growth bench reads from outside the processes it measures: resident memory and open
// file descriptors from Linux's /proc, Redis clients from `INFO clients`, and histograms from a
// Prometheus text exposition (a worker's or the API's `GET /metrics`).
import { readdirSync, readFileSync } from 'node:fs'

/** Resident memory of `pid` in KiB (`VmRSS` of /proc/<pid>/status); 0 once it has exited. */
export function residentKib(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return Number(match?.[1] ?? 0)
  } catch {
    return 0
  }
}

/** File descriptors `pid` holds open (entries of /proc/<pid>/fd). */
export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length
  } catch {
    return 0
  }
}

/** `connected_clients` of `INFO clients`. */
export function connectedClients(info: string): number {
  const match = /^connected_clients:(\d+)/m.exec(info)
  if (match?.[1] === undefined) throw new Error('INFO clients has no connected_clients')
  return Number(match[1])
}

/** One histogram of an exposition: cumulative bucket counts by upper bound, its sum and count. */
export interface HistogramSample {
  readonly buckets: ReadonlyMap<number, number>
  readonly sum: number
  readonly count: number
}

const EMPTY: HistogramSample = { buckets: new Map(), sum: 0, count: 0 }

/** The unlabelled histogram `name` of a Prometheus text exposition; empty when absent. */
export function readHistogram(exposition: string, name: string): HistogramSample {
  const buckets = new Map<number, number>()
  let sum = 0
  let count = 0
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name)) continue
    const bucket = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)`).exec(line)
    if (bucket?.[1] !== undefined)
      buckets.set(bucket[1] === '+Inf' ? Infinity : Number(bucket[1]), Number(bucket[2]))
    else if (line.startsWith(`${name}_sum `)) sum = Number(line.slice(name.length + 5))
    else if (line.startsWith(`${name}_count `)) count = Number(line.slice(name.length + 7))
  }
  return buckets.size === 0 ? EMPTY : { buckets, sum, count }
}

/** What was observed between two samples of one histogram; `Σ` over several processes' samples. */
export function histogramDelta(
  pairs: readonly { readonly before: HistogramSample; readonly after: HistogramSample }[],
): HistogramSample {
  const buckets = new Map<number, number>()
  let sum = 0
  let count = 0
  for (const { before, after } of pairs) {
    for (const [le, n] of after.buckets)
      buckets.set(le, (buckets.get(le) ?? 0) + n - (before.buckets.get(le) ?? 0))
    sum += after.sum - before.sum
    count += after.count - before.count
  }
  return { buckets, sum, count }
}

/**
 * The upper bound of the bucket holding the q-th quantile (0–1) of a delta: "at most this";
 * undefined with nothing observed.
 */
export function quantileBound(h: HistogramSample, q: number): number | undefined {
  if (h.count === 0) return undefined
  const bounds = [...h.buckets.keys()].sort((a, b) => a - b)
  for (const le of bounds) if ((h.buckets.get(le) ?? 0) >= q * h.count) return le
  return Infinity
}

/** The upper bound of the lowest bucket anything fell in: "the smallest value was at most this". */
export function lowestBound(h: HistogramSample): number | undefined {
  const bounds = [...h.buckets.keys()].sort((a, b) => a - b)
  return bounds.find((le) => (h.buckets.get(le) ?? 0) > 0)
}

/** The value of the unlabelled counter or gauge `name`; 0 when absent. */
export function readValue(exposition: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)`, 'm').exec(exposition)
  return Number(match?.[1] ?? 0)
}
