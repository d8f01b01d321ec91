export { DEFAULT_REDIS_TIMEOUTS, createRedisConnection } from './connection.ts'
export type { RedisTimeouts } from './connection.ts'
export { classifyRedisError, isTransientRedisError } from './redis-errors.ts'
export {
  attemptJob,
  createAttemptQueue,
  enqueueAttempt,
  enqueueAttempts,
  ensureAttemptsEnqueued,
} from './attempt-queue.ts'
export type { AttemptJobSpec, AttemptQueue, QueueOptions } from './attempt-queue.ts'
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
