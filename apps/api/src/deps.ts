import type { Logger } from '@baton/observability'
import type { AttemptQueue } from '@baton/queue'
import type { Db } from '@baton/store'
import type { Redis } from 'ioredis'
import type { ApiConfig } from './config.ts'
import type { AttemptCommands } from './services/attempt-commands.ts'

/** Whether this deployment runs a subagent of that name, and how. */
export type SubagentAdmission =
  | { readonly kind: 'runnable'; readonly steerable: boolean }
  | { readonly kind: 'unknown'; readonly known: readonly string[] }
  | { readonly kind: 'refused'; readonly reason: string }

/** The port the API asks before it records anything that names a subagent. */
export interface SubagentPolicy {
  admit(name: string): SubagentAdmission
}

/** Everything the HTTP layer needs, built by compose.ts (or a test) and passed in. */
export interface ApiDeps {
  readonly config: ApiConfig
  readonly logger: Logger
  readonly db: Db
  readonly redis: Redis
  readonly queue: AttemptQueue
  readonly commands: AttemptCommands
}
