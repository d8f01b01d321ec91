import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import {
  LEDGER_RETENTION_MS_DEFAULT,
  dependencyTimeouts,
  dependencyTimeoutsEnvShape,
  redisTopology,
  redisTopologyEnvShape,
  type RedisTopology,
  webhookDestinationPolicy,
  webhookPolicyEnvShape,
  namespaceLimitsEnvShape,
  type DependencyTimeouts,
} from '@baton/contracts'
import { tracingConfig, tracingEnvShape, type TracingConfig } from '@baton/observability'
import type { ResultPolicy } from '@baton/store'
import type { WebhookDeliveryConfig } from './webhooks/webhook-delivery.ts'

const MIB = 1024 * 1024
const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback)

const configSchema = z
  .object({
    DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/baton'),
    REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
    QUEUE_PREFIX: z.string().min(1).default('baton'),
    ...redisTopologyEnvShape,
    WORKER_ID: z.string().min(1).optional(),
    WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(100),
    DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(10),
    DB_PREPARED_STATEMENTS: z.enum(['true', 'false']).default('true'),
    LEASE_TTL_MS: ms(15_000),
    HEARTBEAT_INTERVAL_MS: ms(3_000),
    RECONCILE_INTERVAL_MS: ms(2_000),
    REQUEUE_AFTER_MS: ms(10_000),
    SHUTDOWN_DEADLINE_MS: ms(10_000),
    SHUTDOWN_HARD_DEADLINE_MS: z.coerce.number().int().positive().optional(),
    OUTPUT_MEMORY_BUDGET_BYTES: z.coerce
      .number()
      .int()
      .min(1024 * 1024)
      .max(2 ** 40)
      .default(256 * 1024 * 1024),
    INLINE_OUTPUT_BYTES: z.coerce
      .number()
      .int()
      .min(0)
      .max(1024 * 1024)
      .default(4096),
    ...namespaceLimitsEnvShape,
    ARTIFACT_RETENTION_MS: ms(7 * 24 * 60 * 60 * 1000),
    CONTINUATION_UNCLAIMED_MS: ms(7 * 24 * 60 * 60 * 1000),
    LEDGER_RETENTION_MS: ms(LEDGER_RETENTION_MS_DEFAULT),
    LEDGER_RETENTION_BATCH: z.coerce.number().int().min(1).max(10_000).default(500),
    LEDGER_RETENTION_DUTY_PERCENT: z.coerce.number().int().min(1).max(100).default(25),
    WORKSPACE_DIR: z.string().min(1).default(process.cwd()),
    SUBAGENTS_DIR: z.string().min(1).optional(),
    PROFILES_FILE: z.string().min(1).optional(),
    SCRIPTED_ENABLED: z.enum(['true', 'false']).default('true'),
    SCRIPTED_MODELS_DIR: z.string().min(1).optional(),
    DEFAULT_MODEL: z.string().min(1).default('openai-responses:gpt-5-mini'),
    OPENAI_API_KEY: z.string().min(1).optional(),
    OPENAI_BASE_URL: z.string().url().optional(),
    ANTHROPIC_API_KEY: z.string().min(1).optional(),
    OPENAI_COMPATIBLE_BASE_URL: z.string().url().optional(),
    OPENAI_COMPATIBLE_API_KEY: z.string().min(1).optional(),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    METRICS_PORT: z.coerce.number().int().min(0).max(65_535).default(9464),
    ...dependencyTimeoutsEnvShape,
    ...tracingEnvShape,
    ...webhookPolicyEnvShape,
    WEBHOOK_TIMEOUT_MS: ms(10_000),
    WEBHOOK_MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(4096)
      .max(64 * MIB)
      .default(MIB),
    WEBHOOK_MAX_TRIES: z.coerce.number().int().min(1).max(1000).default(15),
    WEBHOOK_MAX_AGE_MS: ms(24 * 60 * 60 * 1000),
    WEBHOOK_RETRY_BASE_MS: ms(1_000),
    WEBHOOK_RETRY_MAX_MS: ms(15 * 60 * 1000),
    WEBHOOK_POLL_INTERVAL_MS: ms(1_000),
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(16),
  })
  .refine((c) => c.HEARTBEAT_INTERVAL_MS * 2 <= c.LEASE_TTL_MS, {
    message:
      'HEARTBEAT_INTERVAL_MS must be at most half of LEASE_TTL_MS, so one missed beat never loses a lease',
    path: ['HEARTBEAT_INTERVAL_MS'],
  })

/** Every environment variable a worker reads (infra/docker-compose.yml is checked against it). */
export const WORKER_CONFIG_VARIABLES: readonly string[] = Object.keys(configSchema.shape)

export interface WorkerConfig {
  readonly databaseUrl: string
  readonly redisUrl: string
  readonly queuePrefix: string
  /** `QUEUE_PARTITIONS` and `REDIS_CLUSTER_NODES` (see `redisTopologyEnvShape`). */
  readonly queuePartitions: RedisTopology['queuePartitions']
  readonly redisCluster: RedisTopology['redisCluster']
  readonly workerId: string
  readonly concurrency: number
  readonly dbPoolSize: number
  /** Prepare each ledger statement once per connection (off behind a pooler that cannot). */
  readonly dbPreparedStatements: boolean
  readonly leaseTtlMs: number
  readonly heartbeatIntervalMs: number
  readonly reconcileIntervalMs: number
  readonly requeueAfterMs: number
  /** A continuation pending (nobody claimed it) this long is suppressed `unclaimed`. */
  readonly continuationUnclaimedMs: number
  /**
   * How long the ledger keeps a namespace's finished history (agents whose attempts all ended,
   * ended runs) unless the namespace sets its own retention.
   */
  readonly ledgerRetentionMs: number
  /** Rows of history each namespace's retention batch (one statement) looks at. */
  readonly ledgerRetentionBatch: number
  /**
   * The share of its time (percent) the retention lane spends in batches: after a batch that took
   * t it rests t × (100 / duty − 1), so a backlog drains beside claims instead of over them.
   */
  readonly ledgerRetentionDutyPercent: number
  /** Each checked-shutdown try; on SIGTERM tries repeat until the drain completes. */
  readonly shutdownDeadlineMs: number
  /** When set, the drain is given up (exit 1) this long after the stop signal. */
  readonly shutdownHardDeadlineMs: number | undefined
  /** Child output (UTF-8 bytes) all attempts of this worker may hold at once. */
  readonly outputMemoryBudgetBytes: number
  /** The inline bound, artifact limits and retention of terminal results. */
  readonly results: ResultPolicy
  readonly workspaceDir: string
  /** Markdown subagent specs (absent: the built-in `scripted` subagent only). */
  readonly subagentsDir: string | undefined
  /** The profiles file (TOML): hosted parents' profiles and the subagents they expose. */
  readonly profilesFile: string | undefined
  /** Whether the built-in `scripted` child is offered (off in production). */
  readonly scriptedEnabled: boolean
  readonly scriptedModelsDir: string | undefined
  readonly defaultModel: string
  /** Model provider credentials; never logged. */
  readonly models: ModelCredentials
  readonly logLevel: string
  /** Where `GET /metrics` listens (no authentication: an address only the scraper reaches). */
  readonly metricsHost: string
  /** Port of `GET /metrics`; 0 serves none. */
  readonly metricsPort: number
  /**
   * How long a call to Postgres or Redis may take (`DB_*_TIMEOUT_MS`, `REDIS_*_TIMEOUT_MS`). Lease
   * renewals are bounded by the heartbeat interval instead (see `leaseLedgerTimeouts`).
   */
  readonly timeouts: DependencyTimeouts
  /** Where spans go (`OTEL_*`); off unless an OTLP endpoint is set. */
  readonly tracing: TracingConfig
  /** Push delivery to webhooks (`WEBHOOK_*`). */
  readonly webhooks: WebhookDeliveryConfig
}

export interface ModelCredentials {
  readonly openai?: { readonly apiKey: string; readonly baseUrl?: string }
  readonly anthropic?: { readonly apiKey: string }
  readonly openaiCompatible?: { readonly baseUrl: string; readonly apiKey?: string }
}

/** Parses the worker's environment once, in main.ts. Errors name the variable to fix. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): WorkerConfig {
  const parsed = configSchema.safeParse(env)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')
    throw new Error(`invalid worker configuration: ${problems}`)
  }
  const c = parsed.data
  return Object.freeze({
    databaseUrl: c.DATABASE_URL,
    redisUrl: c.REDIS_URL,
    queuePrefix: c.QUEUE_PREFIX,
    ...redisTopology(c),
    workerId: c.WORKER_ID ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    concurrency: c.WORKER_CONCURRENCY,
    dbPoolSize: c.DB_POOL_SIZE,
    dbPreparedStatements: c.DB_PREPARED_STATEMENTS === 'true',
    leaseTtlMs: c.LEASE_TTL_MS,
    heartbeatIntervalMs: c.HEARTBEAT_INTERVAL_MS,
    reconcileIntervalMs: c.RECONCILE_INTERVAL_MS,
    requeueAfterMs: c.REQUEUE_AFTER_MS,
    continuationUnclaimedMs: c.CONTINUATION_UNCLAIMED_MS,
    ledgerRetentionMs: c.LEDGER_RETENTION_MS,
    ledgerRetentionBatch: c.LEDGER_RETENTION_BATCH,
    ledgerRetentionDutyPercent: c.LEDGER_RETENTION_DUTY_PERCENT,
    shutdownDeadlineMs: c.SHUTDOWN_DEADLINE_MS,
    shutdownHardDeadlineMs: c.SHUTDOWN_HARD_DEADLINE_MS,
    outputMemoryBudgetBytes: c.OUTPUT_MEMORY_BUDGET_BYTES,
    results: Object.freeze({
      inlineBytes: c.INLINE_OUTPUT_BYTES,
      artifactMaxBytes: c.ARTIFACT_MAX_BYTES,
      namespaceMaxBytes: c.NAMESPACE_ARTIFACT_MAX_BYTES,
      retentionMs: c.ARTIFACT_RETENTION_MS,
      agentHistoryMaxBytes: c.AGENT_HISTORY_MAX_BYTES,
    }),
    workspaceDir: c.WORKSPACE_DIR,
    subagentsDir: c.SUBAGENTS_DIR,
    profilesFile: c.PROFILES_FILE,
    scriptedEnabled: c.SCRIPTED_ENABLED === 'true',
    scriptedModelsDir: c.SCRIPTED_MODELS_DIR,
    defaultModel: c.DEFAULT_MODEL,
    models: {
      ...(c.OPENAI_API_KEY === undefined
        ? {}
        : {
            openai: {
              apiKey: c.OPENAI_API_KEY,
              ...(c.OPENAI_BASE_URL === undefined ? {} : { baseUrl: c.OPENAI_BASE_URL }),
            },
          }),
      ...(c.ANTHROPIC_API_KEY === undefined ? {} : { anthropic: { apiKey: c.ANTHROPIC_API_KEY } }),
      ...(c.OPENAI_COMPATIBLE_BASE_URL === undefined
        ? {}
        : {
            openaiCompatible: {
              baseUrl: c.OPENAI_COMPATIBLE_BASE_URL,
              ...(c.OPENAI_COMPATIBLE_API_KEY === undefined
                ? {}
                : { apiKey: c.OPENAI_COMPATIBLE_API_KEY }),
            },
          }),
    },
    logLevel: c.LOG_LEVEL,
    metricsHost: c.METRICS_HOST,
    metricsPort: c.METRICS_PORT,
    timeouts: dependencyTimeouts(c),
    tracing: tracingConfig(c),
    webhooks: Object.freeze({
      policy: webhookDestinationPolicy(c),
      timeoutMs: c.WEBHOOK_TIMEOUT_MS,
      maxBodyBytes: c.WEBHOOK_MAX_BODY_BYTES,
      maxTries: c.WEBHOOK_MAX_TRIES,
      maxAgeMs: c.WEBHOOK_MAX_AGE_MS,
      retryBaseMs: c.WEBHOOK_RETRY_BASE_MS,
      retryMaxMs: c.WEBHOOK_RETRY_MAX_MS,
      pollIntervalMs: c.WEBHOOK_POLL_INTERVAL_MS,
      concurrency: c.WEBHOOK_CONCURRENCY,
    }),
  })
}
