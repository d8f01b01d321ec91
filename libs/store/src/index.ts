export { createDb } from './db.ts'
export type { CreateDbOptions, Db, LedgerTimeouts } from './db.ts'
export type { DB, AttemptRow } from './schema.ts'
export { migrateToLatest, pendingMigrations } from './migrate.ts'
export {
  DISTRIBUTED_TABLES,
  DistributionKeyError,
  REFERENCE_TABLES,
  partitionLedgerByHash,
} from './distribution.ts'
export type { MigrationReport } from './migrate.ts'
export {
  LedgerTimeoutError,
  classifyStoreError,
  isDataError,
  isolateUnexpected,
  isTransientStoreError,
  retryTransient,
} from './pg-errors.ts'
export type { RetryTransientOptions } from './pg-errors.ts'
export { acceptDelegations } from './attempts/accept-delegations.ts'
export type {
  AcceptDelegationInput,
  AcceptDelegationOutcome,
} from './attempts/accept-delegations.ts'
export { acceptWithinBudgets } from './attempts/accept-within-budgets.ts'
export type { BudgetedAcceptOutcome, ChildBudgetUse } from './attempts/accept-within-budgets.ts'
export { claimAttempt, claimAttempts } from './attempts/claim-attempt.ts'
export { releaseClaims } from './attempts/release-claims.ts'
export type { ClaimToRelease } from './attempts/release-claims.ts'
export type {
  ClaimAttemptInput,
  ClaimAttemptOutcome,
  ClaimedAttempt,
} from './attempts/claim-attempt.ts'
export { renewLeases } from './attempts/renew-leases.ts'
export type { HeldLease, LeaseRenewal } from './attempts/renew-leases.ts'
export {
  commitTerminal,
  commitTerminals,
  commitTerminalsReturning,
} from './attempts/commit-terminal.ts'
export type {
  CommitTerminalInput,
  CommitTerminalOutcome,
  CommittedTerminal,
} from './attempts/commit-terminal.ts'
export { requestCancel, requestCancels } from './attempts/request-cancel.ts'
export { openDescendants } from './attempts/open-descendants.ts'
export type { RequestCancelInput, RequestCancelOutcome } from './attempts/request-cancel.ts'
export { commitProcessLoss, findExpiredRunning } from './attempts/reconcile-process-loss.ts'
export type { ProcessLoss } from './attempts/reconcile-process-loss.ts'
export { findStaleAccepted } from './attempts/find-stale-accepted.ts'
export type { StaleAccepted } from './attempts/find-stale-accepted.ts'
export { getAttempt, getAttempts, inScope } from './attempts/get-attempt.ts'
export { toAttemptView, toDeliveryView } from './attempts/attempt-view.ts'
export type { AttemptDelivery, AttemptRecord, ReadScope } from './attempts/get-attempt.ts'
export {
  artifactIdFor,
  buildTerminalProjection,
  resultNeedsArtifact,
} from './attempts/terminal-record.ts'
export type { HistoryDelta, TerminalResultInput } from './attempts/terminal-record.ts'
export { getAgentHistory } from './attempts/agent-history.ts'
export { pingStore } from './ping.ts'
export { ledgerMaintenanceGaps } from './maintenance.ts'
export { createGroupBatcher } from './batching/group-batcher.ts'
export type { GroupBatcher, GroupBatcherOptions } from './batching/group-batcher.ts'
export {
  findUndeliveredSteering,
  markSteeringDelivered,
  recordSteering,
} from './attempts/steering.ts'
export type { RecordSteeringOutcome, SteeringMessage } from './attempts/steering.ts'
export {
  apiKeyHash,
  createNamespace,
  findLiveApiKey,
  issueApiKey,
  listApiKeys,
  listNamespaces,
  looksLikeApiKey,
  revokeApiKey,
} from './tenants/api-keys.ts'
export type { ApiKeyRecord, IssuedApiKey, NamespaceRecord } from './tenants/api-keys.ts'
export { admitContinuations, durableResultInput } from './continuations/admit-continuation.ts'
export {
  claimableSessions,
  movedDeliveries,
  reconcileDeliveries,
} from './continuations/reconcile-deliveries.ts'
export type {
  DeliveryAction,
  DeliveryOutcome,
  DeliveryScope,
} from './continuations/reconcile-deliveries.ts'
export { claimContinuation } from './continuations/claim-continuation.ts'
export type {
  ClaimContinuationInput,
  ClaimedContinuation,
} from './continuations/claim-continuation.ts'
export { loadDeliveredResults } from './continuations/delivered-results.ts'
export type { DeliveryRow } from './continuations/delivered-results.ts'
export { getContinuation } from './continuations/get-continuation.ts'
export type { ContinuationRecord } from './continuations/get-continuation.ts'
export { deleteSession } from './continuations/delete-session.ts'
export { createRun } from './runs/create-run.ts'
export type { CreateRunInput, CreateRunOutcome } from './runs/create-run.ts'
export { endRun } from './runs/end-run.ts'
export type { EndRunInput, EndRunOutcome, RunEnd } from './runs/end-run.ts'
export { renewRunLease } from './runs/renew-run-lease.ts'
export type { RenewRunLeaseOutcome } from './runs/renew-run-lease.ts'
export { abandonExpiredRuns } from './runs/abandon-runs.ts'
export type { AbandonedRuns } from './runs/abandon-runs.ts'
export { getRun } from './runs/get-run.ts'
export {
  cancelQueuedHostedRun,
  sessionBudgetUse,
  createHostedRun,
  getRunWithOutput,
  idleHostedSessions,
  startNextRun,
} from './runs/hosted-runs.ts'
export type { CreateHostedRunOutcome } from './runs/hosted-runs.ts'
export {
  createHostedSession,
  getSession,
  isParentAgentName,
  parentAgentName,
} from './sessions/hosted-session.ts'
export type { SessionRecord } from './sessions/hosted-session.ts'
export { readSessionEvents } from './sessions/session-events.ts'
export type { SessionEventRecord } from './sessions/session-events.ts'
export type { RunRecord } from './runs/get-run.ts'
export type { DeliveryState, RunStatus, RunTrigger, SuppressionReason } from './schema.ts'
export { DEFAULT_RESULT_POLICY } from './artifacts/result-policy.ts'
export { getNamespaceLimits, setNamespaceLimits } from './tenants/namespace-limits.ts'
export type { ResultPolicy } from './artifacts/result-policy.ts'
export { expireArtifacts } from './artifacts/expire-artifacts.ts'
export { removeExpiredHistory } from './retention/remove-expired-history.ts'
export { countRetentionDue } from './retention/count-retention-due.ts'
export type { RetentionDue } from './retention/count-retention-due.ts'
export type { RetentionBatch, RetentionCursor } from './retention/remove-expired-history.ts'
export type { ExpiryReport } from './artifacts/expire-artifacts.ts'
export { loadArtifact } from './artifacts/load-artifact.ts'
export type {
  ArtifactLoad,
  ArtifactRecord,
  ByteRange,
  RangeChoice,
} from './artifacts/load-artifact.ts'
export {
  UPLOAD_GRACE_MS,
  collectOrphanUploads,
  discardUpload,
  stageArtifact,
} from './artifacts/stage-artifact.ts'
export type { StagedArtifact } from './artifacts/stage-artifact.ts'
export { loadAttemptResult, loadAttemptResults } from './artifacts/load-attempt-result.ts'
export { namespaceArtifactBytes } from './artifacts/namespace-artifact-bytes.ts'
export { countContinuations } from './continuations/count-continuations.ts'
export type { OpenDeliveryState } from './continuations/count-continuations.ts'
export type { AttemptResultLoad } from './artifacts/load-attempt-result.ts'
export { countAttemptStates } from './dashboard/count-attempt-states.ts'
export type { AttemptStateCount } from './dashboard/count-attempt-states.ts'
export { listLiveLeases } from './dashboard/list-live-leases.ts'
export type { LiveLease } from './dashboard/list-live-leases.ts'
export { listRecentTerminals } from './dashboard/list-recent-terminals.ts'
export type { RecentTerminal } from './dashboard/list-recent-terminals.ts'
export { getAttemptTimeline } from './dashboard/attempt-timeline.ts'
export type { AttemptTimelineRecord } from './dashboard/attempt-timeline.ts'
export { readAttemptActivity } from './dashboard/attempt-activity.ts'
export { listActiveSessions } from './dashboard/list-active-sessions.ts'
export type { ActiveSession } from './dashboard/list-active-sessions.ts'
export { getSessionRuns } from './dashboard/session-runs.ts'
export type { SessionRun, SessionRunChild, SessionRunsRecord } from './dashboard/session-runs.ts'
export type { MinuteActivity } from './dashboard/attempt-activity.ts'
export { releaseContinuationClaim } from './continuations/release-claim.ts'
export type { ReleaseClaimOutcome } from './continuations/release-claim.ts'
export { getWebhook, registerWebhook, removeWebhook } from './webhooks/webhook-registry.ts'
export type { WebhookRecord, WebhookScope } from './webhooks/webhook-registry.ts'
export {
  listWebhookDeliveries,
  settleWebhookDelivery,
  takeWebhookDeliveries,
  toWebhookDeliveryView,
} from './webhooks/webhook-deliveries.ts'
export type {
  TakenWebhookDelivery,
  WebhookDeliveryFence,
  WebhookTryEnd,
} from './webhooks/webhook-deliveries.ts'
