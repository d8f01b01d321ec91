import type { ColumnType, Generated, Selectable } from 'kysely'
import type { FailureCategory, WebhookDeliveryState, WebhookEventType } from '@baton/contracts'

/** Kysely table types for the ledger. SQL is snake_case; repositories map to camelCase. */

type CreatedAt = ColumnType<Date, never, never>

export interface NamespaceTable {
  id: string
  description: string | null
  created_at: CreatedAt
  /** Stored limits (bytes); null where the processes' defaults apply. */
  artifact_quota_bytes: ColumnType<string | null, number | null, number | null>
  artifact_max_bytes: ColumnType<string | null, number | null, number | null>
  agent_history_max_bytes: ColumnType<string | null, number | null, number | null>
}

export interface ApiKeyTable {
  id: string
  namespace_id: string
  name: string
  /** The first characters of the key, shown in listings; never enough to use it. */
  prefix: string
  /** SHA-256 of the key. The key itself is shown once, when it is issued, and never stored. */
  key_hash: Buffer
  created_at: CreatedAt
  revoked_at: Date | null
}

export interface SessionTable {
  id: string
  namespace_id: string
  created_at: CreatedAt
  /** The deletion fence: set once, never cleared; the session's rows stay as evidence. */
  deleted_at: Date | null
  /** A hosted session's profile (0040); null for a host-managed session. */
  profile: string | null
  metadata: ColumnType<unknown, string | undefined, never> | null
  /** A hosted session's parent agent: each of its runs is an attempt of this agent. */
  parent_agent_id: string | null
}

export interface AgentTable {
  id: string
  namespace_id: string
  session_id: string
  name: string
  created_at: CreatedAt
}

export interface AttemptTable {
  id: string
  namespace_id: string
  agent_id: string
  session_id: string
  name: string
  prompt: ColumnType<unknown, string, string>
  metadata: ColumnType<unknown, string, string>
  status: 'accepted' | 'running' | 'terminal'
  owner_id: string | null
  owner_generation: Generated<number>
  lease_expires_at: Date | null
  /** The claim's or latest lease renewal's time (0009); null before either. */
  heartbeat_at: Date | null
  cancel_requested_at: Date | null
  cancel_reason: string | null
  stop_reason: string | null
  output_preview: string | null
  output_truncated: boolean | null
  output_bytes: number | null
  output_digest: string | null
  /** Only the durable set: what the store writes is typed, and migration 0005 normalised the rest. */
  failure_category: FailureCategory | null
  fingerprint: string | null
  created_at: CreatedAt
  started_at: Date | null
  terminal_at: Date | null
  steer_sequence: Generated<number>
  idempotency_key: string | null
  request_digest: string | null
  context_base: number | null
  context_event_count: number | null
  context_digest: string | null
  /** The run that made the delegation; its terminal result is admitted as a continuation. */
  parent_run_id: string | null
  /** The attempt that made the delegation (0042): a child delegating children of its own. */
  parent_attempt_id: string | null
  /** Tokens the child spent, as its terminal commit reported them (0043); null when unreported. */
  usage_tokens: ColumnType<string | null, never, never>
  /** How deep in a chain of delegations (0080), null for depth 1: set once, by the accept. */
  depth: ColumnType<number | null, never, never>
  /** The artifact holding the complete output, when the preview is not all of it. */
  artifact_id: string | null
}
export type AttemptRow = Selectable<AttemptTable>

export interface AttemptTransitionTable {
  id: Generated<string>
  attempt_id: string
  /** The attempt's session: the distribution key (0070), as on every session-scoped row. */
  session_id: string
  from_status: string | null
  to_status: string
  event: string
  owner_id: string | null
  owner_generation: number
  at: CreatedAt
}

export interface AttemptMessageTable {
  attempt_id: string
  session_id: string
  sequence: number
  content: ColumnType<unknown, string, string>
  created_at: CreatedAt
  delivered_at: Date | null
}

export interface AgentContextEventTable {
  agent_id: string
  session_id: string
  seq: number
  attempt_id: string
  event: ColumnType<unknown, string, never>
}

export type RunTrigger = 'user' | 'async_subagent_result' | 'explicit'
export type RunStatus = 'pending' | 'active' | 'completed' | 'failed' | 'cancelled' | 'abandoned'

export interface RunTable {
  id: string
  namespace_id: string
  session_id: string
  trigger_type: RunTrigger
  status: RunStatus
  cause_attempt_id: string | null
  owner_id: string | null
  owner_generation: Generated<number>
  lease_expires_at: Date | null
  created_at: CreatedAt
  /** When the run ended (column named before runs had their own verb). */
  settled_at: Date | null
  /** A run of a hosted session (0040): executed by the fleet as an attempt with the run's id. */
  hosted: Generated<boolean>
  /** A hosted user run's input. */
  input: ColumnType<unknown, string | undefined, never> | null
  /** Hosted runs start one at a time in this order. */
  admission_seq: Generated<string>
  /** A hosted user run's `Idempotency-Key` and its request's digest (0085). */
  idempotency_key: string | null
  request_digest: string | null
}
export type RunRow = Selectable<RunTable>

export type DeliveryState = 'held' | 'pending' | 'claimed' | 'delivered' | 'suppressed'
export type SuppressionReason =
  | 'parent_cancelled'
  | 'session_deleted'
  | 'shutdown'
  | 'consumer_failed'
  | 'consumer_cancelled'
  | 'unclaimed'

/**
 * Written by the admission and reconciliation functions (migrations 0007, 0014), claims and
 * consumptions.
 */
export interface ContinuationTable {
  attempt_id: string
  namespace_id: string
  session_id: string
  parent_run_id: string
  state: DeliveryState
  consumer_run_id: string | null
  claim_generation: number | null
  claim_deadline: Date | null
  suppression_reason: SuppressionReason | null
  suppression_run_id: string | null
  /** The canonical input; an artifact's content is referred to by id, size and digest (0013). */
  input: string
  /** The digest the receipt binds: of the input as admitted. */
  input_digest: string
  /** Admitted with the artifact's content in the input, before 0013 (see that migration). */
  input_embedded_content: Generated<boolean>
  receipt: string
  admitted_at: CreatedAt
  delivered_at: Date | null
}
export type ContinuationRow = Selectable<ContinuationTable>
export interface ArtifactTable {
  id: string
  namespace_id: string
  session_id: string
  attempt_id: string
  /** The upload whose chunks hold the output's UTF-8 bytes (`artifact_chunks`). */
  upload_id: string | null
  /** The size of each chunk but the last; null for an artifact expired before chunks existed. */
  chunk_bytes: number | null
  preview: string
  /** bigint: pg returns it as a string. */
  bytes: ColumnType<string, number, never>
  digest: string
  created_at: CreatedAt
  expires_at: Date
  expired_at: Date | null
}

/** Content written ahead of its terminal commit, not yet bound to an artifact. */
export interface ArtifactUploadTable {
  id: string
  session_id: string
  attempt_id: string
  bytes: ColumnType<string, number, never>
  digest: string
  chunks: number
  created_at: CreatedAt
}

/** One chunk of an upload's content, with its `chunkDigest`. */
export interface ArtifactChunkTable {
  upload_id: string
  session_id: string
  seq: number
  content: Buffer
  digest: string
}

export interface NamespaceUsageTable {
  namespace_id: string
  /** Bytes of the namespace's artifacts whose content is still stored. */
  artifact_bytes: ColumnType<string, number, number>
}

export interface WebhookTable {
  id: string
  namespace_id: string
  /** Null for the namespace's webhook. */
  session_id: string | null
  url: string
  secret: string
  created_at: CreatedAt
  updated_at: ColumnType<Date, never, Date>
}
export type WebhookRow = Selectable<WebhookTable>

export interface WebhookDeliveryTable {
  /** The stable `webhook-id` of every try. */
  id: string
  namespace_id: string
  session_id: string
  webhook_id: string | null
  event_type: WebhookEventType
  attempt_id: string
  state: WebhookDeliveryState
  tries: number
  owner_id: string | null
  owner_generation: number
  /** When it is due: the next try's time while `pending`, the lease's end while `sending`. */
  next_try_at: Date | null
  created_at: CreatedAt
  delivered_at: Date | null
  last_status: number | null
  last_error: string | null
}
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>

export interface DB {
  namespaces: NamespaceTable
  api_keys: ApiKeyTable
  sessions: SessionTable
  agents: AgentTable
  attempts: AttemptTable
  attempt_transitions: AttemptTransitionTable
  attempt_messages: AttemptMessageTable
  agent_context_events: AgentContextEventTable
  runs: RunTable
  continuations: ContinuationTable
  artifacts: ArtifactTable
  artifact_uploads: ArtifactUploadTable
  artifact_chunks: ArtifactChunkTable
  namespace_usage: NamespaceUsageTable
  webhooks: WebhookTable
  webhook_deliveries: WebhookDeliveryTable
}
