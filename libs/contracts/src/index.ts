export { BatonError, ErrorCode, errorBodySchema, errorBodySchemaOf } from './errors.ts'
export type { BatonErrorOptions, ErrorBody } from './errors.ts'
export { DependencyFailure, TRANSIENT_SOCKET_CODES } from './dependency-failure.ts'
export { dependencyTimeouts, dependencyTimeoutsEnvShape } from './dependency-timeouts.ts'
export { redisTopology, redisTopologyEnvShape } from './redis-topology.ts'
export type { RedisTopology } from './redis-topology.ts'
export type { DependencyTimeouts, DependencyTimeoutsEnv } from './dependency-timeouts.ts'
export {
  canonicalJson,
  chunkDigest,
  continuationDigest,
  historyDigest,
  requestDigest,
  resultDigest,
  resultDigestOfParts,
  terminalFingerprint,
} from './digest.ts'
export type { ArtifactBinding, HistoryDeltaBinding, TerminalProjection } from './digest.ts'
export {
  cascadeCancelReason,
  FAILURE_CATEGORIES,
  FailureCategory,
  failureCategorySchema,
  isFailureCategory,
} from './failure-category.ts'
export {
  ATTEMPT_STATUSES,
  STOP_REASONS,
  agentHistoryViewSchema,
  artifactViewSchema,
  attemptSnapshotSchema,
  attemptViewSchema,
  historyEventViewSchema,
  isTerminalView,
  steeringProgressSchema,
  stopReasonSchema,
  terminalAttemptViewSchema,
} from './attempt.ts'
export type {
  AgentHistoryView,
  AnyAttemptView,
  ArtifactView,
  AttemptSnapshot,
  AttemptStatus,
  HistoryEventView,
  AttemptView,
  SteeringProgress,
  StopReason,
  TerminalAttemptView,
} from './attempt.ts'
export {
  Limits,
  batchAnswerSchema,
  batchItemAcceptedSchema,
  cancelAnswerSchema,
  cancelRequestSchema,
  delegationAcceptedSchema,
  delegationMetadataSchema,
  delegationRequestSchema,
  idempotencyKeySchema,
  isoTimeSchema,
  batchItemSchema,
  promptSchema,
  promptToBlocks,
  sessionIdSchema,
  steerAnswerSchema,
  steerRequestSchema,
  subagentNameSchema,
  textBlockSchema,
  uuidSchema,
  waitOptionsSchema,
  waitQuerySchema,
} from './delegation.ts'
export type {
  BatchAnswer,
  CancelAnswer,
  SteerAnswer,
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
  apiBellSchema,
  attemptJobSchema,
  attemptSettlementSchema,
  claimableDetailSchema,
  continuationClaimableSchema,
  settledDetailSchema,
  workerCommandSchema,
} from './jobs.ts'
export type {
  ApiBell,
  AttemptJob,
  AttemptSettlement,
  ClaimableDetail,
  ContinuationClaimable,
  SettledDetail,
  WorkerCommand,
  WorkerCommandName,
} from './jobs.ts'
export { isStorableText, storableText } from './storable-text.ts'
export { SCRIPT_OUTPUT_BYTES_MAX, readScript, scriptSchema } from './scripted-script.ts'
export type { Script, ScriptReading } from './scripted-script.ts'
export {
  apiKeyListSchema,
  apiKeyViewSchema,
  createNamespaceRequestSchema,
  issueApiKeyRequestSchema,
  issuedApiKeySchema,
  namespaceIdSchema,
  namespaceLimitsSchema,
  namespaceLimitsViewSchema,
  namespaceListSchema,
  namespaceViewSchema,
  setNamespaceLimitsRequestSchema,
} from './tenants.ts'
export type {
  ApiKeyView,
  IssuedApiKeyView,
  NamespaceLimitsView,
  NamespaceView,
  StoredNamespaceLimits,
} from './tenants.ts'
export {
  ContinuationLimits,
  DELIVERY_STATES,
  RUN_STATUSES,
  RUN_TRIGGERS,
  SUPPRESSION_REASONS,
  claimFenceSchema,
  claimRequestSchema,
  cancelRunRequestSchema,
  completeRunRequestSchema,
  continuationClaimSchema,
  continuationConclusionSchema,
  createRunRequestSchema,
  deliveredContentSchema,
  deliveredResultSchema,
  deliveryViewSchema,
  heartbeatRequestSchema,
  runConsumptionSchema,
  runHeartbeatRequestSchema,
  runLeaseSchema,
  runViewSchema,
} from './continuation.ts'
export type {
  ClaimFence,
  ContinuationCause,
  ContinuationClaim,
  ContinuationConclusion,
  ContinuationReceipt,
  DurableInput,
  DurableInputContent,
  CreateRunRequest,
  DeliveredContent,
  DeliveredResult,
  RunConsumption,
  RunLease,
  DeliveryState,
  DeliveryView,
  RunStatus,
  RunTrigger,
  RunView,
  SuppressionReason,
} from './continuation.ts'
export {
  DashboardLimits,
  dashboardActivityMinuteSchema,
  dashboardOverviewSchema,
  dashboardSessionSchema,
  dashboardSessionsSchema,
  dashboardTimelineEntrySchema,
  dashboardTimelineSchema,
} from './dashboard.ts'
export type {
  DashboardActivityMinute,
  DashboardOverview,
  DashboardSession,
  DashboardSessions,
  DashboardTimeline,
  DashboardTimelineEntry,
} from './dashboard.ts'
export {
  WEBHOOK_DELIVERY_STATES,
  WEBHOOK_EVENT_TYPES,
  WebhookLimits,
  refusedAddress,
  registerWebhookRequestSchema,
  registeredWebhookSchema,
  webhookDeliveryListSchema,
  webhookDeliveryQuerySchema,
  webhookDeliveryViewSchema,
  webhookDestinationPolicy,
  webhookPayloadSchema,
  webhookPolicyEnvShape,
  webhookSecretSchema,
  webhookUrlRefusal,
  webhookViewSchema,
} from './webhook.ts'
export type {
  RegisterWebhookRequest,
  RegisteredWebhook,
  WebhookDeliveryState,
  WebhookDeliveryView,
  WebhookDestinationPolicy,
  WebhookEventType,
  WebhookPayload,
  WebhookView,
} from './webhook.ts'
export {
  ARTIFACT_CHUNK_BYTES,
  ARTIFACT_MAX_BYTES_CEILING,
  namespaceLimitDefaults,
  namespaceLimitsEnvShape,
} from './namespace-limits.ts'
export type { NamespaceLimits, NamespaceLimitsEnv } from './namespace-limits.ts'
export { ModelProviderPrefix, modelIdProblem } from './model-id.ts'
export {
  SESSION_EVENT_KINDS,
  createSessionRequestSchema,
  hostedRunViewSchema,
  runRequestSchema,
  sessionViewSchema,
} from './hosted.ts'
export type {
  CreateSessionRequest,
  HostedRunView,
  RunRequest,
  SessionEvent,
  SessionView,
} from './hosted.ts'
export {
  LEDGER_RETENTION_MS_DEFAULT,
  LEDGER_RETENTION_MS_MAX,
  LEDGER_RETENTION_MS_MIN,
} from './retention.ts'
