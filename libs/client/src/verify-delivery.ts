import {
  continuationDigest,
  resultDigest,
  type ContinuationReceipt,
  type DeliveredResult,
  type DurableInput,
} from '@baton/contracts'

/** A delivery that does not hold together; `reason` says which check failed. */
export class DeliveryVerificationError extends Error {
  readonly attemptId: string
  readonly reason:
    'receipt_attempt' | 'receipt_digest' | 'receipt_bytes' | 'content_mismatch' | 'malformed'
  constructor(attemptId: string, reason: DeliveryVerificationError['reason'], message: string) {
    super(message)
    this.name = 'DeliveryVerificationError'
    this.attemptId = attemptId
    this.reason = reason
  }
}

/** A delivery whose receipt and content were checked. */
export interface VerifiedDelivery {
  readonly receipt: ContinuationReceipt
  readonly input: DurableInput
  /**
   * The complete result, checked against the digest the input names; `undefined` when the
   * delivery carries none (`expired`, `corrupt` or `unavailable`: see `content.kind`).
   */
  readonly text: string | undefined
}

/**
 * Checks what a claim, a held consumption or an explicit run delivered, against its receipt:
 * the receipt names this attempt and binds the input (`continuationDigest` of it and its size in
 * UTF-8 bytes), and the content is what the input names — its text has the digest and size the
 * input carries, or its summary names them. Throws `DeliveryVerificationError` otherwise; a
 * delivery that fails is not what the ledger admitted.
 */
export function verifyDelivery(delivered: DeliveredResult): VerifiedDelivery {
  const fail = (reason: DeliveryVerificationError['reason'], message: string) =>
    new DeliveryVerificationError(delivered.attemptId, reason, message)
  let receipt: ContinuationReceipt
  let input: DurableInput
  try {
    receipt = JSON.parse(delivered.receipt) as ContinuationReceipt
    input = JSON.parse(delivered.input) as DurableInput
  } catch {
    throw fail('malformed', 'the receipt or the input is not JSON')
  }
  if (receipt.attemptId !== delivered.attemptId)
    throw fail('receipt_attempt', 'the receipt is of another attempt')
  if (receipt.inputDigest !== continuationDigest(delivered.input))
    throw fail('receipt_digest', "the input's digest is not the one the receipt binds")
  if (receipt.inputBytes !== Buffer.byteLength(delivered.input, 'utf8'))
    throw fail('receipt_bytes', "the input's size is not the one the receipt binds")
  const named = input.result.content
  const content = delivered.content
  const mismatch = () => fail('content_mismatch', 'the content is not what the input names')
  switch (content.kind) {
    case 'inline':
      if (named.kind !== 'inline' || named.text !== content.text) throw mismatch()
      return { receipt, input, text: content.text }
    case 'artifact':
      if (
        named.kind !== 'artifact' ||
        named.digest !== content.digest ||
        named.bytes !== content.bytes ||
        Buffer.byteLength(content.text, 'utf8') !== named.bytes ||
        resultDigest(content.text) !== named.digest
      )
        throw mismatch()
      return { receipt, input, text: content.text }
    case 'expired':
    case 'corrupt':
      // A summary: it names the result the cause binds.
      if (input.cause.resultDigest !== content.digest || input.cause.resultBytes !== content.bytes)
        throw mismatch()
      return { receipt, input, text: undefined }
    case 'unavailable':
      if (named.kind !== 'unavailable' || named.bytes !== content.bytes) throw mismatch()
      return { receipt, input, text: undefined }
    default: {
      const never: never = content
      throw fail('malformed', `unknown content ${JSON.stringify(never)}`)
    }
  }
}
