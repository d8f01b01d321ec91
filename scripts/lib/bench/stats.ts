// The bench's statistics: percentiles of latencies, medians over rounds and their spread.

/** The p-th percentile of ascending `sorted` (nearest rank, rounded down); 0 when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

/** The middle value (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

export const round = (n: number, digits = 2): number => Number(n.toFixed(digits))

/** The median of values over rounds, and the lowest and highest of them. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export function spread(values: readonly number[], digits: number): Spread {
  return {
    median: round(median(values), digits),
    min: round(Math.min(...values), digits),
    max: round(Math.max(...values), digits),
  }
}
