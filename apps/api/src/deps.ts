import type { Logger } from '@baton/observability'
import type { AttemptQueue, CompletionDoorbell, ControlPublisher } from '@baton/queue'
import type { Db } from '@baton/store'
import type { Redis } from 'ioredis'
import type { ApiConfig } from './config.ts'
import type { Admission } from './services/admission.ts'

/** Everything the HTTP layer needs, built by main.ts (or a test) and passed in. */
export interface ApiDeps {
  readonly config: ApiConfig
  readonly logger: Logger
  readonly db: Db
  readonly redis: Redis
  readonly queue: AttemptQueue
  readonly publisher: ControlPublisher
  readonly doorbell: CompletionDoorbell
  readonly admission: Admission
  /** Subagent names this deployment accepts; anything else is rejected before a write. */
  readonly subagentNames: ReadonlySet<string>
  /** Subagents whose provider accepts steering messages (`sendMessage`). */
  readonly steerableSubagents: ReadonlySet<string>
}
