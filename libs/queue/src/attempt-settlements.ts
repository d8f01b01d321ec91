import { QueueName, attemptSettlementSchema, type AttemptSettlement } from '@baton/contracts'
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
})

export type SettlementPublisher = StreamPublisher<AttemptSettlement>
export const createSettlementPublisher = settlements.createPublisher
export const createSettlementListener = settlements.createListener

/**
 * Rings the "attempt settled" bell after the terminal outcome is durable: the worker's commit, the
 * reconciler's process loss and the API's cancel of a queued attempt all announce it here.
 */
export function announceSettled(
  publisher: SettlementPublisher,
  attemptId: string,
  logger: WarnLogger,
): Promise<void> {
  return publishAfterRecord(publisher, { eventName: 'settled', attemptId }, logger)
}
