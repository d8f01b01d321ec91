import { Counter, Histogram, type Registry } from 'prom-client'
import {
  SECONDS_BUCKETS,
  continuationDeliveriesCounter,
  createMetricsRegistry,
  terminalCounter,
  type TerminalLabel,
} from './metrics-registry.ts'
import { registerScrapeGauges, type ScrapeSources } from './scrape-gauges.ts'

/** Items per ledger statement of the worker's group batchers (claims, terminal commits). */
const BATCH_ITEM_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500]

/**
 * Seconds a lease had left at its renewal: fine where a lease is close to expiring, coarse where
 * it is safe (a heartbeat renews at about one interval into a TTL of at least two).
 */
const LEASE_REMAINING_BUCKETS = [0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 30, 60, 120]

/**
 * A worker's metrics. Every update is in memory: per claim or commit batch, per heartbeat, per
 * reconcile pass; nothing adds a round trip. Only the queue depth gauge is read at scrape time.
 */
export interface WorkerMetrics {
  readonly registry: Registry
  readonly attemptsTerminal: Counter<TerminalLabel>
  /** Accept → claim, on the database clock (the claim statement answers it). */
  readonly attemptQueuedSeconds: Histogram
  /** Claim → terminal commit answered, on this worker's monotonic clock. */
  readonly attemptRunSeconds: Histogram
  /** This worker aborted a child for a cancel → its `aborted` terminal committed. */
  readonly cancelToAbortedSeconds: Histogram
  readonly leaseRenewals: Counter
  readonly leaseLosses: Counter
  /** Seconds one renewal statement took (sent → answered), whatever number of leases it held. */
  readonly leaseRenewalSeconds: Histogram
  /**
   * Per lease renewed, the seconds it still had when the renewal answered, counted from the last
   * confirmation the worker holds: how close a live child came to losing its lease.
   */
  readonly leaseRemainingSeconds: Histogram
  /** Seconds one reconciler pass over the ledger took. */
  readonly reconcilePassSeconds: Histogram
  readonly reconcilerActions: Counter<'action'>
  readonly continuationDeliveries: Counter<'action'>
  /** Items per claim or commit statement (`statement` = claim | commit). */
  readonly ledgerBatchItems: Histogram<'statement'>
}

export function createWorkerMetrics(sources: ScrapeSources = {}): WorkerMetrics {
  const registry = createMetricsRegistry()
  registerScrapeGauges(registry, sources)
  const seconds = (name: string, help: string): Histogram =>
    new Histogram({ name, help, buckets: [...SECONDS_BUCKETS], registers: [registry] })
  return {
    registry,
    attemptsTerminal: terminalCounter(registry),
    attemptQueuedSeconds: seconds(
      'baton_attempt_queued_seconds',
      'Seconds from accept to claim of the attempts this worker claimed (database clock).',
    ),
    attemptRunSeconds: seconds(
      'baton_attempt_run_seconds',
      'Seconds from claim to committed terminal of the attempts this worker ran.',
    ),
    cancelToAbortedSeconds: seconds(
      'baton_cancel_to_aborted_seconds',
      'Seconds from this worker aborting a child for a cancel (cancel command or heartbeat) to its aborted terminal committed.',
    ),
    leaseRenewals: new Counter({
      name: 'baton_lease_renewals_total',
      help: 'Leases this worker renewed (one heartbeat statement renews many).',
      registers: [registry],
    }),
    leaseLosses: new Counter({
      name: 'baton_lease_losses_total',
      help: 'Leases a heartbeat found lost (expired, fenced, terminal or missing); the child was aborted.',
      registers: [registry],
    }),
    leaseRenewalSeconds: seconds(
      'baton_lease_renewal_seconds',
      "Seconds each heartbeat statement took, from sent to answered (one statement renews all of a worker's leases).",
    ),
    leaseRemainingSeconds: new Histogram({
      name: 'baton_lease_remaining_seconds',
      help: 'Per lease renewed: seconds its confirmed lease still had left when the renewal answered.',
      buckets: [...LEASE_REMAINING_BUCKETS],
      registers: [registry],
    }),
    reconcilePassSeconds: seconds(
      'baton_reconcile_pass_seconds',
      'Seconds each reconciler pass over the ledger took.',
    ),
    reconcilerActions: new Counter({
      name: 'baton_reconciler_actions_total',
      help: 'What the reconciler did, by action: process_loss, requeue, artifact_expiry, retention (attempts removed), delivery.',
      labelNames: ['action'],
      registers: [registry],
    }),
    continuationDeliveries: continuationDeliveriesCounter(registry),
    ledgerBatchItems: new Histogram({
      name: 'baton_ledger_batch_items',
      help: 'Items per batched ledger statement of this worker, by statement (claim, commit).',
      labelNames: ['statement'],
      buckets: BATCH_ITEM_BUCKETS,
      registers: [registry],
    }),
  }
}
