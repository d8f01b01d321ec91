export { DEFAULT_REDIS_TIMEOUTS, createRedisConnection } from './connection.ts'
export type { RedisCluster, RedisConnection, RedisTimeouts } from './connection.ts'
export {
  attemptPartition,
  partitionOf,
  partitionPrefix,
  partitionPrefixes,
  sessionPartition,
  splitConcurrency,
} from './partitions.ts'
export type { QueueTopology, SessionKey } from './partitions.ts'
export { classifyRedisError, isTransientRedisError } from './redis-errors.ts'
export {
  attemptJob,
  createAttemptQueue,
  createAttemptQueues,
  enqueueAttempt,
  enqueueAttempts,
  enqueueRouted,
  ensureAttemptsEnqueued,
  ensureRoutedEnqueued,
} from './attempt-queue.ts'
export type {
  AttemptJobSpec,
  AttemptQueue,
  AttemptQueues,
  AttemptRoute,
  QueueOptions,
  RoutedAttemptJob,
} from './attempt-queue.ts'
export type {
  ListenerOptions,
  PublisherOptions,
  StreamListener,
  StreamPublisher,
  WarnLogger,
} from './event-stream.ts'
export {
  createWorkerCommandListener,
  createWorkerCommandPublisher,
  sendWorkerCommand,
} from './worker-commands.ts'
export type { WorkerCommandPublisher } from './worker-commands.ts'
export {
  announceClaimable,
  announceSettled,
  createSettlementListener,
  createSettlementPublisher,
} from './attempt-settlements.ts'
export type { SettlementPublisher } from './attempt-settlements.ts'
