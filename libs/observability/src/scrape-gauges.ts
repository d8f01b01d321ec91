import { Gauge, type Registry } from 'prom-client'

/**
 * Reads behind the gauges computed at scrape time, never on the hot path: each source is asked
 * once per scrape. A process passes the sources it can answer; a missing one is not reported.
 */
export interface ScrapeSources {
  /** Jobs of the attempts queue by BullMQ state (`getJobCounts`): one Redis round trip. */
  readonly queueJobs?: () => Promise<Readonly<Record<string, number>>>
  /** Artifact bytes each namespace holds (the `namespace_usage` table). */
  readonly artifactBytes?: () => Promise<readonly { namespaceId: string; bytes: number }[]>
  /** Continuations in the ledger by delivery state. */
  readonly continuations?: () => Promise<readonly { state: string; count: number }[]>
  /** Told when a source fails; its gauge is then left empty and `baton_scrape_source_up` 0. */
  readonly onError?: (source: ScrapeSourceName, error: unknown) => void
}

export type ScrapeSourceName = 'queue' | 'artifacts' | 'continuations'

/**
 * Registers the gauges read at scrape time. All of them share one read per scrape: the first
 * gauge collected starts it, the others wait for the same promise. A failing source (Redis or
 * Postgres down) never fails the scrape: its gauge is emptied (no stale value is reported) and
 * `baton_scrape_source_up{source}` says 0.
 */
export function registerScrapeGauges(registry: Registry, sources: ScrapeSources): void {
  let reading: Promise<void> | undefined
  const refresh = (): Promise<void> =>
    (reading ??= readAll().finally(() => {
      reading = undefined
    }))
  const collect = async (): Promise<void> => refresh()

  const up = new Gauge({
    name: 'baton_scrape_source_up',
    help: 'Whether the last read of a scrape-time source (queue, artifacts, continuations) answered: 1 or 0.',
    labelNames: ['source'],
    registers: [registry],
    collect,
  })
  // Only the gauges this process has a source for: an empty family would read as "none".
  const gauge = (name: string, help: string, label: string, present: boolean) =>
    present
      ? new Gauge({ name, help, labelNames: [label], registers: [registry], collect })
      : undefined
  const queueJobs = gauge(
    'baton_queue_jobs',
    'Jobs of the attempts queue by BullMQ state, read at scrape time.',
    'state',
    sources.queueJobs !== undefined,
  )
  const artifactBytes = gauge(
    'baton_artifact_bytes',
    'Bytes of live artifact content each namespace holds (its quota usage), read at scrape time.',
    'namespace',
    sources.artifactBytes !== undefined,
  )
  const continuations = gauge(
    'baton_continuations',
    'Open continuations by delivery state (held, pending, claimed), read at scrape time.',
    'state',
    sources.continuations !== undefined,
  )

  async function read<T>(
    name: ScrapeSourceName,
    source: (() => Promise<T>) | undefined,
    gauge: Gauge<string> | undefined,
    apply: (value: T) => void,
  ): Promise<void> {
    if (source === undefined || gauge === undefined) return
    try {
      const value = await source()
      gauge.reset()
      apply(value)
      up.set({ source: name }, 1)
    } catch (error) {
      gauge.reset()
      up.set({ source: name }, 0)
      sources.onError?.(name, error)
    }
  }

  async function readAll(): Promise<void> {
    await Promise.all([
      read('queue', sources.queueJobs, queueJobs, (counts) => {
        for (const [state, count] of Object.entries(counts)) queueJobs?.set({ state }, count)
      }),
      read('artifacts', sources.artifactBytes, artifactBytes, (rows) => {
        for (const row of rows) artifactBytes?.set({ namespace: row.namespaceId }, row.bytes)
      }),
      read('continuations', sources.continuations, continuations, (rows) => {
        for (const row of rows) continuations?.set({ state: row.state }, row.count)
      }),
    ])
  }
}
