import {
  LEDGER_RETENTION_MS_DEFAULT,
  dependencyTimeouts,
  dependencyTimeoutsEnvShape,
  redisTopology,
  redisTopologyEnvShape,
  type RedisTopology,
  webhookDestinationPolicy,
  webhookPolicyEnvShape,
  type WebhookDestinationPolicy,
  namespaceLimitDefaults,
  namespaceLimitsEnvShape,
  type DependencyTimeouts,
  type NamespaceLimits,
} from '@baton/contracts'
import { tracingConfig, tracingEnvShape, type TracingConfig } from '@baton/observability'
import { z } from 'zod'

const configSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/baton'),
  // Empty counts as unset, as for ADMIN_API_KEY.
  DATABASE_READ_URL: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z
      .string()
      .refine((url) => URL.canParse(url) && /^postgres(ql)?:$/.test(new URL(url).protocol), {
        message: 'a postgres:// URL of a streaming standby, or unset',
      })
      .optional(),
  ),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  QUEUE_PREFIX: z.string().min(1).default('baton'),
  ...redisTopologyEnvShape,
  SUBAGENTS_DIR: z.string().min(1).optional(),
  PROFILES_FILE: z.string().min(1).optional(),
  SCRIPTED_ENABLED: z.enum(['true', 'false']).default('true'),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(50 * 1024 * 1024)
    .default(1024 * 1024),
  DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(20),
  DB_PREPARED_STATEMENTS: z.enum(['true', 'false']).default('true'),
  BATCH_MAX_ITEMS: z.coerce.number().int().min(1).max(10_000).default(1000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Empty counts as unset (compose passes `${BATON_ADMIN_API_KEY:-}`).
  ADMIN_API_KEY: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z
      .string()
      .min(32, 'use at least 32 random characters')
      .max(512)
      .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
      .optional(),
  ),
  API_KEY_CACHE_MS: z.coerce.number().int().min(0).max(300_000).default(5000),
  RATE_LIMIT_MAX: z.coerce.number().int().min(0).max(1_000_000).default(0),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(100).max(86_400_000).default(60_000),
  ...namespaceLimitsEnvShape,
  LEDGER_RETENTION_MS: z.coerce.number().int().positive().default(LEDGER_RETENTION_MS_DEFAULT),
  ...dependencyTimeoutsEnvShape,
  ...tracingEnvShape,
  ...webhookPolicyEnvShape,
})

/** Every environment variable the API reads (infra/docker-compose.yml is checked against it). */
export const API_CONFIG_VARIABLES: readonly string[] = Object.keys(configSchema.shape)

export interface ApiConfig {
  readonly host: string
  readonly port: number
  readonly databaseUrl: string
  /**
   * A streaming standby the dashboard's admin reads (overview, sessions, timelines) may be served
   * from (`DATABASE_READ_URL`); undefined: they read the primary. Nothing else reads it: a wait,
   * a claim or any tenant read answers from the primary, where the commit it was woken for is.
   */
  readonly databaseReadUrl: string | undefined
  readonly redisUrl: string
  readonly queuePrefix: string
  /** `QUEUE_PARTITIONS` and `REDIS_CLUSTER_NODES` (see `redisTopologyEnvShape`). */
  readonly queuePartitions: RedisTopology['queuePartitions']
  readonly redisCluster: RedisTopology['redisCluster']
  /** Markdown subagent specs; with the built-in `scripted`, the names this API accepts. */
  readonly subagentsDir: string | undefined
  /** The profiles file (TOML): the profiles sessions may be created with. */
  readonly profilesFile: string | undefined
  /** Whether the built-in `scripted` child is offered (off in production). */
  readonly scriptedEnabled: boolean
  readonly bodyLimitBytes: number
  readonly dbPoolSize: number
  /** Prepare each ledger statement once per connection (off behind a pooler that cannot). */
  readonly dbPreparedStatements: boolean
  /** The most delegations one batch submit may carry. */
  readonly batchMaxItems: number
  readonly logLevel: string
  /** The key that manages namespaces and keys and opens the queue dashboard; unset: no admin. */
  readonly adminApiKey: string | undefined
  /** How long a verified key is trusted before it is looked up again (revocation elsewhere). */
  readonly apiKeyCacheMs: number
  /** Requests one key may make per window; 0 turns rate limiting off. */
  readonly rateLimitMax: number
  readonly rateLimitWindowMs: number
  /**
   * The limits of a namespace that has none stored (`ARTIFACT_MAX_BYTES`,
   * `NAMESPACE_ARTIFACT_MAX_BYTES`): what the admin API reports as its defaults.
   */
  readonly limitDefaults: NamespaceLimits
  /** The workers' default ledger retention: the dashboard shows what it removes next. */
  readonly ledgerRetentionMs: number
  /** How long a call to Postgres or Redis may take (`DB_*_TIMEOUT_MS`, `REDIS_*_TIMEOUT_MS`). */
  readonly timeouts: DependencyTimeouts
  /** Where spans go (`OTEL_*`); off unless an OTLP endpoint is set. */
  readonly tracing: TracingConfig
  /** Where webhooks may be registered to (`WEBHOOK_ALLOWED_HOSTS`, `WEBHOOK_ALLOW_PRIVATE`). */
  readonly webhookPolicy: WebhookDestinationPolicy
}

/** The API's environment does not parse: `variables` names each setting to fix. */
export class ApiConfigError extends Error {
  override readonly name = 'ApiConfigError'
  readonly variables: readonly string[]
  constructor(variables: readonly string[], problems: string) {
    super(`invalid API configuration: ${problems}`)
    this.variables = variables
  }
}

/** Parses the API's environment once, in main.ts. Errors name the variable to fix. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ApiConfig {
  const parsed = configSchema.safeParse(env)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')
    const variables = [...new Set(parsed.error.issues.map((i) => i.path.join('.')))]
    throw new ApiConfigError(variables, problems)
  }
  const c = parsed.data
  return Object.freeze({
    host: c.HOST,
    port: c.PORT,
    databaseUrl: c.DATABASE_URL,
    databaseReadUrl: c.DATABASE_READ_URL,
    redisUrl: c.REDIS_URL,
    queuePrefix: c.QUEUE_PREFIX,
    ...redisTopology(c),
    subagentsDir: c.SUBAGENTS_DIR,
    profilesFile: c.PROFILES_FILE,
    scriptedEnabled: c.SCRIPTED_ENABLED === 'true',
    bodyLimitBytes: c.BODY_LIMIT_BYTES,
    dbPoolSize: c.DB_POOL_SIZE,
    dbPreparedStatements: c.DB_PREPARED_STATEMENTS === 'true',
    batchMaxItems: c.BATCH_MAX_ITEMS,
    logLevel: c.LOG_LEVEL,
    adminApiKey: c.ADMIN_API_KEY,
    apiKeyCacheMs: c.API_KEY_CACHE_MS,
    rateLimitMax: c.RATE_LIMIT_MAX,
    rateLimitWindowMs: c.RATE_LIMIT_WINDOW_MS,
    limitDefaults: namespaceLimitDefaults(c),
    ledgerRetentionMs: c.LEDGER_RETENTION_MS,
    timeouts: dependencyTimeouts(c),
    tracing: tracingConfig(c),
    webhookPolicy: webhookDestinationPolicy(c),
  })
}
