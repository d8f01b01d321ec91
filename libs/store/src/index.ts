export { createDb } from './db.ts'
export type { CreateDbOptions, Db } from './db.ts'
export type { DB, AttemptRow } from './schema.ts'
export { migrateToLatest, pendingMigrations } from './migrate.ts'
export type { MigrationReport } from './migrate.ts'
export { isDataError, isTransientStoreError, retryTransient } from './pg-errors.ts'
export type { RetryTransientOptions } from './pg-errors.ts'
export { acceptDelegations } from './attempts/accept-delegations.ts'
export type {
  AcceptDelegationInput,
  AcceptDelegationOutcome,
} from './attempts/accept-delegations.ts'
export { claimAttempt, claimAttempts } from './attempts/claim-attempt.ts'
export type {
  ClaimAttemptInput,
  ClaimAttemptOutcome,
  ClaimedAttempt,
} from './attempts/claim-attempt.ts'
export { renewLeases } from './attempts/renew-leases.ts'
export type { HeldLease, LeaseRenewal } from './attempts/renew-leases.ts'
export { commitTerminal, commitTerminals } from './attempts/commit-terminal.ts'
export type { CommitTerminalInput, CommitTerminalOutcome } from './attempts/commit-terminal.ts'
export { requestCancel, requestCancels } from './attempts/request-cancel.ts'
export type { RequestCancelInput, RequestCancelOutcome } from './attempts/request-cancel.ts'
export { commitProcessLoss, findExpiredRunning } from './attempts/reconcile-process-loss.ts'
export { findStaleAccepted } from './attempts/find-stale-accepted.ts'
export { getAttempt } from './attempts/get-attempt.ts'
export type { AttemptRecord } from './attempts/get-attempt.ts'
export { artifactIdFor, buildTerminalProjection } from './attempts/terminal-record.ts'
export type { HistoryDelta, TerminalResultInput } from './attempts/terminal-record.ts'
export { getAgentHistory } from './attempts/agent-history.ts'
export { pingStore } from './ping.ts'
export { createGroupBatcher } from './batching/group-batcher.ts'
export type { GroupBatcher, GroupBatcherOptions } from './batching/group-batcher.ts'
export {
  findUndeliveredSteering,
  markSteeringDelivered,
  recordSteering,
} from './attempts/steering.ts'
export type { RecordSteeringOutcome, SteeringMessage } from './attempts/steering.ts'
export { DEFAULT_RESULT_POLICY } from './artifacts/result-policy.ts'
export type { ResultPolicy } from './artifacts/result-policy.ts'
export { expireArtifacts } from './artifacts/expire-artifacts.ts'
export type { ExpiryReport } from './artifacts/expire-artifacts.ts'
export { loadArtifact } from './artifacts/load-artifact.ts'
export type { ArtifactLoad, ArtifactRecord } from './artifacts/load-artifact.ts'
export { loadAttemptResult } from './artifacts/load-attempt-result.ts'
export type { AttemptResultLoad } from './artifacts/load-attempt-result.ts'
