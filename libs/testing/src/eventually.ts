/**
 * Waits until `probe` returns a value other than `undefined`, re-checking every `intervalMs`, or
 * fails after `timeoutMs` with the last observation. For tests only: production code never polls.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000)
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${options.what ?? 'a condition'}`)
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 25))
  }
}
