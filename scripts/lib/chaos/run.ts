// The state of one `npm run chaos` run, passed explicitly to every part (workload, follow-ups,
// faults, audit, report) instead of living in module variables.
import { randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createBatonClient, type BatonClient } from '@baton/client'
import type { ContinuedPair } from './history.ts'

export interface ChaosOptions {
  readonly json: boolean
  readonly verbose: boolean
  readonly strict: boolean
  readonly count: number
  /** Hosted sessions, each given `RUNS_PER_SESSION` user runs (lib/chaos/hosted.ts). */
  readonly hosted: number
  readonly clients: number
  readonly workers: number
  /**
   * On a private Redis Cluster (3 masters, 3 replicas) with the queue in `CLUSTER_PARTITIONS`
   * partitions, instead of one Redis behind a fault proxy.
   */
  readonly cluster: boolean
  readonly submitTimeoutMs: number
  readonly quiesceTimeoutMs: number
}

export type Kind =
  'instant' | 'large' | 'slow' | 'failing' | 'hang' | 'steered' | 'continued' | 'witnessed'

/** A delegation the client got a 202 for. */
export interface Submitted {
  readonly i: number
  readonly kind: Kind
  readonly agentId: string
  readonly expect: string | undefined
  readonly at: number
  steered?: boolean
  cancel?: string
}

export type FaultKind =
  | 'worker_kills'
  | 'api_restarts'
  | 'redis_flushes'
  | 'pg_kills'
  | 'pg_stalls'
  | 'pg_resets'
  | 'redis_stalls'
  | 'lock_holds'
  | 'rolling_restarts'
  | 'master_kills'
const FAULT_KINDS: readonly FaultKind[] = [
  'worker_kills',
  'api_restarts',
  'redis_flushes',
  'pg_kills',
  'pg_stalls',
  'pg_resets',
  'redis_stalls',
  'lock_holds',
  'rolling_restarts',
  'master_kills',
]

/** The queue partitions of a run on the cluster. */
export const CLUSTER_PARTITIONS = 8

/**
 * The faults of a topology: every kind on a cluster (where a Redis flush empties every master and
 * a Redis stall stops one master for less than the cluster's node timeout), all but the master
 * kill on one Redis, which has no master to kill in place of its replica.
 */
export const faultKindsOf = (options: Pick<ChaosOptions, 'cluster'>): readonly FaultKind[] =>
  options.cluster ? FAULT_KINDS : FAULT_KINDS.filter((k) => k !== 'master_kills')

export interface ChaosStats {
  postConnectionErrors: number
  readonly postRetryStatus: Map<number, number>
  readonly postRejected: Map<number, number>
  readonly steer: Map<string, number>
  readonly cancel: Map<string, number>
  readonly continuation: Map<string, number>
  followUpErrors: number
  followUpGaveUp: number
  orphanCancels: number
  /** Hosted sessions created and user runs queued (their 201s). */
  readonly hosted: { sessions: number; runs: number }
}

export interface ChaosRun {
  readonly options: ChaosOptions
  readonly redisDb: number
  readonly redisUrl: string
  readonly databaseUrl: string
  readonly prefix: string
  /** Fixed for the whole run: clients reconnect to it after API restarts. */
  readonly port: number
  readonly logDir: string
  readonly client: BatonClient
  /** Delegations the client got a 202 for, by attempt id. */
  readonly submitted: Map<string, Submitted>
  /** Continuations (second turns of `continued`) the client got a 202 for, by attempt id. */
  readonly continuations: Map<string, ContinuedPair>
  readonly stats: ChaosStats
  /** The fault kinds of this run's topology, each of which must fire (`faultKindsOf`). */
  readonly faultKinds: readonly FaultKind[]
  /** Faults injected, by kind (every kind of `faultKinds`). */
  readonly faults: Partial<Record<FaultKind, number>>
  /** Cancels, steers and continuations still in flight. */
  readonly followUps: Set<Promise<void>>
  /** Fires when submission must stop retrying (set when submission starts). */
  submitDeadline: AbortSignal
  /**
   * Fires when follow-ups must stop retrying: a quiescence timeout after the last fault, so a
   * follow-up that waits out a slow machine is not cut off while faults still fire.
   */
  followUpDeadline: AbortSignal
  readonly log: (line: string) => void
  /** Since the run started: `12.3s`. */
  readonly elapsed: () => string
  /** `chaos: [12.3s] …` */
  readonly note: (line: string) => void
}

export function createRun(
  options: ChaosOptions,
  services: { redisUrl: string; databaseUrl: string; port: number; apiKey: string },
): ChaosRun {
  const redisDb = 9
  const redisUrl = new URL(services.redisUrl)
  redisUrl.pathname = `/${redisDb}`
  const prefix = `baton-chaos-${randomUUID().slice(0, 8)}`
  const t0 = performance.now()
  const log = (line: string): void => {
    if (options.json) console.error(line)
    else console.log(line)
  }
  const never = new AbortController().signal
  return {
    options,
    redisDb,
    redisUrl: redisUrl.toString(),
    databaseUrl: services.databaseUrl,
    prefix,
    port: services.port,
    logDir: join(tmpdir(), prefix),
    client: createBatonClient({
      baseUrl: `http://127.0.0.1:${services.port}`,
      apiKey: services.apiKey,
    }),
    submitted: new Map(),
    continuations: new Map(),
    stats: {
      postConnectionErrors: 0,
      postRetryStatus: new Map(),
      postRejected: new Map(),
      steer: new Map(),
      cancel: new Map(),
      continuation: new Map(),
      followUpErrors: 0,
      followUpGaveUp: 0,
      orphanCancels: 0,
      hosted: { sessions: 0, runs: 0 },
    },
    faultKinds: faultKindsOf(options),
    faults: Object.fromEntries(faultKindsOf(options).map((k) => [k, 0])),
    followUps: new Set(),
    submitDeadline: never,
    followUpDeadline: never,
    log,
    elapsed: () => elapsedSeconds(t0),
    note: (line) => log(`chaos: [${elapsedSeconds(t0)}] ${line}`),
  }
}

const elapsedSeconds = (t0: number): string => `${((performance.now() - t0) / 1000).toFixed(1)}s`

/** How long one call may take before it is retried (with the same key, for a POST). */
export const POST_TIMEOUT_MS = 15_000

/** Delegations spread over 97 sessions. */
export const sessionOf = (i: number): string => `chaos-${i % 97}`

export const bump = <K>(m: Map<K, number>, k: K): void => {
  m.set(k, (m.get(k) ?? 0) + 1)
}

export const rand = (min: number, max: number): number =>
  min + Math.floor(Math.random() * (max - min + 1))

/** Keeps a follow-up in `run.followUps` until it settles. */
export function track(run: ChaosRun, p: Promise<void>): void {
  run.followUps.add(p)
  void p.finally(() => run.followUps.delete(p))
}

/** Resolves once no follow-up is in flight (follow-ups may start others). */
export async function settleFollowUps(run: ChaosRun): Promise<void> {
  while (run.followUps.size > 0) await Promise.race(run.followUps)
}
