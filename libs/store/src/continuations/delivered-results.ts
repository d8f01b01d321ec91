import {
  canonicalJson,
  continuationDigest,
  type DeliveredContent,
  type DeliveredResult,
} from '@baton/contracts'
import type { Db } from '../db.ts'
import { loadAttemptResults, type AttemptResultLoad } from '../artifacts/load-attempt-result.ts'

/** A continuation row as a delivery reads it: its attempt, receipt and stored input. */
export interface DeliveryRow {
  readonly attempt_id: string
  readonly receipt: string
  readonly input: string
  /** The digest the receipt binds (that of the input as admitted). */
  readonly input_digest: string
  /** Admitted before 0013 with the artifact's content in the input (see that migration). */
  readonly input_embedded_content: boolean
}

/** The columns of a `DeliveryRow`, for the statements that deliver (`returning` or `select`). */
export const DELIVERY_COLUMNS = [
  'attempt_id',
  'receipt',
  'input',
  'input_digest',
  'input_embedded_content',
] as const

/**
 * The results of delivered continuations as every consumption answers them (a claim, a held
 * result its run consumed, an explicit run): the receipt and input as stored, and the complete
 * content resolved now — verified against the digest the attempt's terminal commit bound, and
 * past its artifact's deadline (database clock) only the expiry summary (see `loadAttemptResults`).
 * The content lives in the artifact alone, so expiry reaches every delivery.
 *
 * A row admitted with the content in its input (before 0013) is delivered with that input
 * restored while the content lasts — the reference with the verified bytes in place of the id,
 * exactly as admission wrote it — so its receipt still verifies; past expiry it keeps the
 * reference. Read-only.
 */
export async function loadDeliveredResults(
  db: Db,
  namespaceId: string,
  rows: readonly DeliveryRow[],
): Promise<DeliveredResult[]> {
  const loads = await loadAttemptResults(
    db,
    namespaceId,
    rows.map((r) => r.attempt_id),
  )
  return rows.map((row) => {
    const load = loads.get(row.attempt_id)
    if (load === undefined) throw new Error(`no result load for attempt ${row.attempt_id}`)
    const content = deliveredContent(row.attempt_id, load)
    return {
      attemptId: row.attempt_id,
      receipt: row.receipt,
      input: row.input_embedded_content ? admittedInput(row, content) : row.input,
      content,
    }
  })
}

function deliveredContent(attemptId: string, load: AttemptResultLoad): DeliveredContent {
  switch (load.kind) {
    case 'complete':
      return load.artifactId === null
        ? { kind: 'inline', text: load.output }
        : {
            kind: 'artifact',
            artifactId: load.artifactId,
            bytes: load.bytes,
            digest: load.digest,
            text: load.output,
          }
    case 'expired':
      return {
        kind: 'expired',
        artifactId: load.artifact.artifactId,
        bytes: load.artifact.bytes,
        digest: load.artifact.digest,
      }
    case 'corrupt':
      return {
        kind: 'corrupt',
        artifactId: load.artifactId,
        bytes: load.bytes,
        digest: load.digest,
      }
    case 'unavailable':
      return { kind: 'unavailable', bytes: load.bytes, preview: load.preview }
    case 'missing':
    case 'not_terminal':
      throw new Error(`a continuation's attempt ${attemptId} is ${load.kind}`)
    default: {
      const never: never = load
      throw new Error(`unexpected result load ${JSON.stringify(never)}`)
    }
  }
}

/**
 * The input a pre-0013 receipt binds, rebuilt from the reference and the verified content: the
 * same member in the same canonical place, `base64` of the bytes instead of `artifactId`. When
 * the content is gone (or the rebuild does not match the receipt), the stored reference.
 */
function admittedInput(row: DeliveryRow, content: DeliveredContent): string {
  if (content.kind !== 'artifact') return row.input
  const input = JSON.parse(row.input) as { result: { content: unknown } }
  input.result.content = {
    base64: Buffer.from(content.text, 'utf8').toString('base64'),
    bytes: content.bytes,
    digest: content.digest,
    kind: 'artifact',
  }
  const admitted = canonicalJson(input)
  return continuationDigest(admitted) === row.input_digest ? admitted : row.input
}
