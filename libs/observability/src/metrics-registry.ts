import { Counter, Registry, collectDefaultMetrics } from 'prom-client'

export type { Registry }

/**
 * A registry of its own for one process (or one test's API or worker), holding Node's default
 * process metrics (`process_*`, `nodejs_*`) beside the metrics its caller registers.
 */
export function createMetricsRegistry(): Registry {
  return Registry.merge([processMetrics(), new Registry()])
}

let processRegistry: Registry | undefined

/**
 * The default process metrics, collected once per process: they describe the process, and each
 * collection starts an event-loop monitor and a GC observer that are never stopped, so a test
 * process building many registries must not start one per registry. The default gauges named
 * like counters (`nodejs_active_handles_total`: promtool refuses a `_total` that is not a
 * counter) are left out; `nodejs_active_handles` and its siblings, by type, say the same.
 */
function processMetrics(): Registry {
  if (processRegistry !== undefined) return processRegistry
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  for (const { name } of registry.getMetricsAsArray()) {
    if (name.endsWith('_total') && !(registry.getSingleMetric(name) instanceof Counter))
      registry.removeSingleMetric(name)
  }
  processRegistry = registry
  return registry
}

/**
 * Latency buckets in seconds, from a batched statement's few milliseconds to a child agent's
 * minutes; one set for every duration Baton reports, so dashboards compare like with like.
 */
export const SECONDS_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800,
]

/** Label names of `baton_attempts_terminal_total`; values come from the contracts' closed sets. */
export type TerminalLabel = 'stop_reason' | 'failure_category'

/**
 * `failure_category` of a terminal without one (`completed`): a label value, never an empty one,
 * so a query can select it.
 */
export const NO_FAILURE_CATEGORY = 'none'

/**
 * Attempts made terminal by this process, by stop reason and failure category. Workers count their
 * commits and the process-loss terminals they synthesise; the API counts the queued attempts it
 * cancels. Summed over the fleet it is every terminal the ledger recorded.
 */
export function terminalCounter(registry: Registry): Counter<TerminalLabel> {
  return new Counter({
    name: 'baton_attempts_terminal_total',
    help: 'Attempts this process made terminal, by stop reason and failure category.',
    labelNames: ['stop_reason', 'failure_category'],
    registers: [registry],
  })
}

/**
 * Deliveries of continuations moved by reconciliation (`admitted`, `acknowledged`, `released`,
 * `suppressed`): by the worker's reconciler, and by the API when a run's settlement reconciles the
 * deliveries it held or claimed.
 */
export function continuationDeliveriesCounter(registry: Registry): Counter<'action'> {
  return new Counter({
    name: 'baton_continuation_deliveries_total',
    help: 'Continuation deliveries moved by reconciliation, by action.',
    labelNames: ['action'],
    registers: [registry],
  })
}
