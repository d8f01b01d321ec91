import {
  QueueName,
  apiBellSchema,
  type ApiBell,
  type ClaimableDetail,
  type SettledDetail,
} from '@baton/contracts'
import {
  defineStream,
  publishAfterRecord,
  type StreamPublisher,
  type WarnLogger,
} from './event-stream.ts'

/**
 * The API's bells: `settled`, published by whoever made an attempt terminal in the ledger, read
 * by the API's bounded waits; and `claimable`, published by whoever may have made a session's
 * continuation claimable, read by that session's bounded claims.
 */
const settlements = defineStream<ApiBell>({
  name: QueueName.AttemptSettlements,
  eventNames: ['settled', 'claimable'],
  schema: apiBellSchema,
  // An entry carries terminal views (a few hundred bytes to a few kilobytes each): keep what
  // covers a listener's lag, not an hour of them.
  maxEvents: 5_000,
})

export type SettlementPublisher = StreamPublisher<ApiBell>
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
  const event: ApiBell =
    detail === undefined
      ? { eventName: 'settled', attemptId }
      : { eventName: 'settled', attemptId, detail }
  return publishAfterRecord(publisher, event, logger)
}

/**
 * Rings the "continuation claimable" bell of a session after the ledger recorded what may have
 * made one claimable: a result landing for one of its parent runs (admitted or held in the same
 * statement), a run's end admitting what it held, a reconciliation that admitted or released a
 * delivery. Only that session's bounded claims wake. Never rejects (see `publishAfterRecord`);
 * resolves whether the bell rang.
 */
export function announceClaimable(
  publisher: SettlementPublisher,
  attemptId: string,
  session: ClaimableDetail,
  logger: WarnLogger,
): Promise<boolean> {
  return publishAfterRecord(
    publisher,
    {
      eventName: 'claimable',
      attemptId,
      detail: { namespaceId: session.namespaceId, sessionId: session.sessionId },
    },
    logger,
  )
}
