import type { ApiMetrics, Logger, Tracing } from '@baton/observability'
import type { AttemptQueues, RedisConnection } from '@baton/queue'
import type { Db } from '@baton/store'
import type { ApiConfig } from './config.ts'
import type { KeyResolver } from './http/caller.ts'
import type { AttemptCommands } from './services/attempt-commands.ts'
import type { HostedCommands } from './services/hosted-commands.ts'
import type { RunCommands } from './services/run-commands.ts'

/** Everything the HTTP layer needs, built by compose.ts (or a test) and passed in. */
export interface ApiDeps {
  readonly config: ApiConfig
  readonly logger: Logger
  readonly db: Db
  /**
   * What the dashboard's JSON routes read: a pool on `DATABASE_READ_URL`'s standby, else `db`
   * itself. Only those admin reads, which may lag the primary by the standby's replay; every other
   * route, and every wait, reads `db`.
   */
  readonly dashboardDb: Db
  readonly redis: RedisConnection
  /** The attempt queue's partitions (`QUEUE_PARTITIONS`). */
  readonly queues: AttemptQueues
  readonly commands: AttemptCommands
  /** Verifies tenants' API keys (with a short cache). */
  readonly keys: KeyResolver
  readonly runs: RunCommands
  /** Hosted sessions and their runs on the fleet. */
  readonly hosted: HostedCommands
  /** This process's metrics (its own registry), served at `/metrics`. */
  readonly metrics: ApiMetrics
  /** Request spans when on (see http/request-tracing.ts). */
  readonly tracing: Tracing
}
