import {
  QueueName,
  attemptSettlementSchema,
  type AttemptSettlement,
  type SettledDetail,
} from '@baton/contracts'
import {
  defineStream,
  publishAfterRecord,
  type StreamPublisher,
  type WarnLogger,
} from './event-stream.ts'

/** Published by whoever made an attempt terminal in the ledger; read by the API's waits. */
const settlements = defineStream<AttemptSettlement>({
  name: QueueName.AttemptSettlements,
  eventNames: ['settled'],
  schema: attemptSettlementSchema,
  // An entry carries terminal views (a few hundred bytes to a few kilobytes each): keep what
  // covers a listener's lag, not an hour of them.
  maxEvents: 5_000,
})

export type SettlementPublisher = StreamPublisher<AttemptSettlement>
export const createSettlementPublisher = settlements.createPublisher
export const createSettlementListener = settlements.createListener

/**
 * Rings the "attempt settled" bell after the terminal outcome is durable: the worker's commit, the
 * reconciler's process loss and the API's cancel of a queued attempt all announce it here. A
 * committer that read the attempt back in its commit passes it as `detail` (see `SettledDetail`).
 * Never rejects; resolves whether the bell rang.
 */
export function announceSettled(
  publisher: SettlementPublisher,
  attemptId: string,
  logger: WarnLogger,
  detail?: SettledDetail,
): Promise<boolean> {
  const event: AttemptSettlement =
    detail === undefined
      ? { eventName: 'settled', attemptId }
      : { eventName: 'settled', attemptId, detail }
  return publishAfterRecord(publisher, event, logger)
}
