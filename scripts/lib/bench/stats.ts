/** The p-th percentile of ascending `sorted` (nearest rank, rounded down); 0 when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

export const round = (n: number, digits = 2): number => Number(n.toFixed(digits))
