export { test, describe, expect } from './fixtures.ts'
export type { Closeable, ServiceFixtures, Services } from './fixtures.ts'
export { eventually } from './eventually.ts'
export {
  READY_MESSAGES,
  apiAddress,
  apiProcessEnv,
  servicesEnv,
  spawnApp,
  startApp,
  startServiceProcess,
  workerProcessEnv,
} from './processes.ts'
export type {
  AppProcess,
  AppProcessOptions,
  BatonApp,
  ServiceProcess,
  TestServices,
} from './processes.ts'
export { transitionEvents, untilAttempt, withEmptyDatabase } from './ledger.ts'
export { batonHttp, delegationsPath } from './baton-http.ts'
export type { BatonHttp, JsonAnswer } from './baton-http.ts'
export type { BatonFleet, BatonStack, StackOptions, StartBaton } from './stack.ts'
export { historyTurn } from './history.ts'
export type { HistoryEvent } from './history.ts'
export { hasRedisServerBinary, startRedisServer } from './redis-server.ts'
export { findPgBouncer, startPgBouncer } from './pgbouncer.ts'
export type { PgBouncer, PgBouncerOptions } from './pgbouncer.ts'
export { startFaultProxy } from './fault-proxy.ts'
export type { FaultProxy, HeldAnswer } from './fault-proxy.ts'
export type { RedisServer } from './redis-server.ts'
export { startRedisCluster } from './redis-cluster.ts'
export type { ClusterMaster, RedisClusterServers } from './redis-cluster.ts'
export {
  WITNESS_CHECKS,
  violationTally,
  auditContinuations,
  auditExecutionWitness,
  auditLedger,
  describeAttempts,
  duplicateExecutionAttempts,
  duplicateTerminalAttempts,
  lostAttempts,
  stuckAttempts,
} from './ledger-audit.ts'
export type {
  CheckResults,
  ContinuationAudit,
  LedgerInvariants,
  WitnessAudit,
  WitnessCheck,
} from './ledger-audit.ts'
export { ledgerCopiesOf } from './ledger-copies.ts'
export { tenantKey } from './tenants.ts'
export { DEMO_PROFILES_ENV, runDemoSession, untilDemoRunsEnded } from './hosted-demo.ts'
export { freePort, parseExposition, promtoolCheck, sampleValue } from './prometheus.ts'
export type { MetricSample } from './prometheus.ts'
export { ACP_FIXTURE_AGENT } from './fixtures/acp-agent-path.ts'
export { startWebhookReceiver } from './webhook-receiver.ts'
export type { ReceivedWebhook, WebhookAnswer, WebhookReceiver } from './webhook-receiver.ts'
