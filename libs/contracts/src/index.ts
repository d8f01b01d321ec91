export { BatonError, ErrorCode } from './errors.ts'
export type { BatonErrorOptions, ErrorBody } from './errors.ts'
export {
  canonicalJson,
  continuationDigest,
  historyDigest,
  requestDigest,
  resultDigest,
  terminalFingerprint,
} from './digest.ts'
export type { ArtifactBinding, HistoryDeltaBinding, TerminalProjection } from './digest.ts'
export {
  FAILURE_CATEGORIES,
  FailureCategory,
  failureCategorySchema,
  isFailureCategory,
} from './failure-category.ts'
export { ATTEMPT_STATUSES, STOP_REASONS, isTerminalView, stopReasonSchema } from './attempt.ts'
export type {
  AgentHistoryView,
  AnyAttemptView,
  ArtifactView,
  AttemptStatus,
  HistoryEventView,
  AttemptView,
  SteeringProgress,
  StopReason,
  TerminalAttemptView,
} from './attempt.ts'
export {
  Limits,
  cancelRequestSchema,
  delegationAcceptedSchema,
  delegationMetadataSchema,
  delegationRequestSchema,
  idempotencyKeySchema,
  batchItemSchema,
  promptSchema,
  promptToBlocks,
  sessionIdSchema,
  steerRequestSchema,
  subagentNameSchema,
  textBlockSchema,
  uuidSchema,
  waitOptionsSchema,
  waitQuerySchema,
} from './delegation.ts'
export type {
  DelegationAccepted,
  DelegationMetadata,
  BatchItem,
  DelegationRequest,
  Prompt,
} from './delegation.ts'
export {
  ATTEMPT_JOB_NAME,
  QueueName,
  WORKER_COMMAND_NAMES,
  attemptJobSchema,
  attemptSettlementSchema,
  workerCommandSchema,
} from './jobs.ts'
export type { AttemptJob, AttemptSettlement, WorkerCommand, WorkerCommandName } from './jobs.ts'
export { isStorableText, storableText } from './storable-text.ts'
export { SCRIPT_OUTPUT_BYTES_MAX, readScript, scriptSchema } from './scripted-script.ts'
export type { Script, ScriptReading } from './scripted-script.ts'
export {
  apiKeyViewSchema,
  createNamespaceRequestSchema,
  issueApiKeyRequestSchema,
  issuedApiKeySchema,
  namespaceIdSchema,
  namespaceViewSchema,
} from './tenants.ts'
export type { ApiKeyView, IssuedApiKeyView, NamespaceView } from './tenants.ts'
export {
  ContinuationLimits,
  DELIVERY_STATES,
  RUN_STATUSES,
  RUN_TRIGGERS,
  SUPPRESSION_REASONS,
  claimFenceSchema,
  claimRequestSchema,
  completeRunRequestSchema,
  createRunRequestSchema,
  heartbeatRequestSchema,
} from './continuation.ts'
export type {
  ClaimFence,
  ContinuationClaim,
  ContinuationSettled,
  CreateRunRequest,
  DeliveryState,
  DeliveryView,
  RunStatus,
  RunTrigger,
  RunView,
  SuppressionReason,
} from './continuation.ts'
export {
  DashboardLimits,
  dashboardOverviewSchema,
  dashboardTimelineEntrySchema,
  dashboardTimelineSchema,
} from './dashboard.ts'
export type { DashboardOverview, DashboardTimeline, DashboardTimelineEntry } from './dashboard.ts'
