import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import {
  SECONDS_BUCKETS,
  continuationDeliveriesCounter,
  createMetricsRegistry,
  terminalCounter,
  type TerminalLabel,
} from './metrics-registry.ts'
import { registerScrapeGauges, type ScrapeSources } from './scrape-gauges.ts'

/**
 * The API's metrics. Counters move once per batch or per request in memory (no I/O); the queue
 * depth, artifact bytes and continuation gauges are read when Prometheus scrapes.
 */
export interface ApiMetrics {
  readonly registry: Registry
  /** Delegations the ledger accepted (new attempts; a replayed idempotent request is not one). */
  readonly attemptsAccepted: Counter
  /** Queued attempts this API cancelled (a direct terminal commit). */
  readonly attemptsTerminal: Counter<TerminalLabel>
  /** Submit-and-wait requests, from the accept to the answer, by `result` (terminal | snapshot). */
  readonly submitWaitSeconds: Histogram<'result'>
  /** Continuations a consumer claimed through this API. */
  readonly continuationClaims: Counter
  readonly continuationDeliveries: Counter<'action'>
}

/** What the API process itself knows at scrape time, from memory. */
export interface ApiProcessGauges {
  /** Bounded waits open in this process (callers registered on its settlement doorbell). */
  readonly openWaits?: () => number
}

export function createApiMetrics(
  sources: ScrapeSources = {},
  gauges: ApiProcessGauges = {},
): ApiMetrics {
  const registry = createMetricsRegistry()
  registerScrapeGauges(registry, sources)
  const { openWaits } = gauges
  if (openWaits !== undefined) {
    new Gauge({
      name: 'baton_open_waits',
      help: 'Bounded waits open in this API process, read from memory at scrape time.',
      registers: [registry],
      collect() {
        this.set(openWaits())
      },
    })
  }
  return {
    registry,
    attemptsAccepted: new Counter({
      name: 'baton_attempts_accepted_total',
      help: 'Delegations the ledger accepted (new attempts), counted per accepted batch.',
      registers: [registry],
    }),
    attemptsTerminal: terminalCounter(registry),
    submitWaitSeconds: new Histogram({
      name: 'baton_submit_wait_seconds',
      help: 'Submit-and-wait delegations: seconds from the accept to the answer, by result (terminal or snapshot at the bound).',
      labelNames: ['result'],
      buckets: [...SECONDS_BUCKETS],
      registers: [registry],
    }),
    continuationClaims: new Counter({
      name: 'baton_continuation_claims_total',
      help: 'Continuations claimed by consumers through this API.',
      registers: [registry],
    }),
    continuationDeliveries: continuationDeliveriesCounter(registry),
  }
}
