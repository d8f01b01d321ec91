import { describe, expect, it } from 'vitest'
import {
  canonicalJson,
  continuationDigest,
  resultDigest,
  type DeliveredContent,
  type DeliveredResult,
} from '@baton/contracts'
import { DeliveryVerificationError, verifyDelivery } from './verify-delivery.ts'

const ATTEMPT = '0b2f7a4e-8c1d-4e8f-9a55-2f1c3b7d9e01'
const ARTIFACT = '7c6d2f1e-3a4b-8c5d-9e6f-0a1b2c3d4e5f'

/** A delivery as the ledger makes one: the input, its receipt, and the content resolved. */
function delivered(output: string, inArtifact: boolean): DeliveredResult {
  const bytes = Buffer.byteLength(output)
  const digest = resultDigest(output)
  const cause = {
    agentId: ATTEMPT,
    attemptId: ATTEMPT,
    parentRunId: ATTEMPT,
    resultBytes: bytes,
    resultDigest: digest,
    sessionId: 's',
    traceId: null,
  }
  const named = inArtifact
    ? { artifactId: ARTIFACT, bytes, digest, kind: 'artifact' }
    : { kind: 'inline', text: output }
  const input = canonicalJson({
    cause,
    result: { content: named, failureCategory: null, stopReason: 'completed' },
  })
  const receipt = canonicalJson({
    attemptId: ATTEMPT,
    cause,
    inputBytes: Buffer.byteLength(input),
    inputDigest: continuationDigest(input),
  })
  const content: DeliveredContent = inArtifact
    ? { kind: 'artifact', artifactId: ARTIFACT, bytes, digest, text: output }
    : { kind: 'inline', text: output }
  return { attemptId: ATTEMPT, receipt, input, content }
}

function reason(check: () => unknown): string | undefined {
  try {
    check()
    return undefined
  } catch (error) {
    return error instanceof DeliveryVerificationError ? error.reason : String(error)
  }
}

describe('verifyDelivery', () => {
  it('answers the verified text of an inline result and of an artifact', () => {
    expect(verifyDelivery(delivered('short ✓', false)).text).toBe('short ✓')
    expect(verifyDelivery(delivered('long ✓\u0000'.repeat(1000), true)).text).toBe(
      'long ✓\u0000'.repeat(1000),
    )
  })

  it('accepts an expiry summary of what the input names, with no text', () => {
    const d = delivered('gone', true)
    const summary = {
      kind: 'expired',
      artifactId: ARTIFACT,
      bytes: 4,
      digest: resultDigest('gone'),
    }
    expect(verifyDelivery({ ...d, content: summary } as DeliveredResult).text).toBeUndefined()
  })

  it('refuses an input the receipt does not bind, a receipt of another attempt, content the input does not name', () => {
    const d = delivered('answer', true)
    expect(reason(() => verifyDelivery({ ...d, input: d.input.replace('"s"', '"t"') }))).toBe(
      'receipt_digest',
    )
    expect(reason(() => verifyDelivery({ ...d, attemptId: ARTIFACT }))).toBe('receipt_attempt')
    const other = { ...d.content, text: 'answeR' } as DeliveredContent
    expect(reason(() => verifyDelivery({ ...d, content: other }))).toBe('content_mismatch')
    const inline = delivered('answer', false)
    const swapped = { kind: 'inline', text: 'other' } as const
    expect(reason(() => verifyDelivery({ ...inline, content: swapped }))).toBe('content_mismatch')
    const wrongSummary = { kind: 'expired', artifactId: ARTIFACT, bytes: 6, digest: 'd' } as const
    expect(reason(() => verifyDelivery({ ...d, content: wrongSummary }))).toBe('content_mismatch')
    expect(reason(() => verifyDelivery({ ...d, receipt: 'not json' }))).toBe('malformed')
  })
})
