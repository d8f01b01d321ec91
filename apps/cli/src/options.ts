// Parsers of option values. Each throws commander's InvalidArgumentError, which the program reports
// as a usage error (exit 2) before anything is sent.
import { InvalidArgumentError } from 'commander'
import {
  ContinuationLimits,
  LEDGER_RETENTION_MS_MAX,
  LEDGER_RETENTION_MS_MIN,
  Limits,
} from '@baton/contracts'
import { parseDuration } from './duration.ts'

/**
 * A wait bound: a duration the API accepts for one bounded wait. Checked here against the
 * contract's own limit so that a bound the API would refuse is a usage error, not a request.
 */
export function parseWaitBound(text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined) throw new InvalidArgumentError('use a duration such as 500ms, 30s or 1m.')
  if (ms > Limits.waitTimeoutMsMax) {
    throw new InvalidArgumentError(`one wait is at most ${Limits.waitTimeoutMsMax / 1000}s.`)
  }
  return ms
}

/** A continuation claim's lease: a duration within the contract's bounds. */
export function parseLease(text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined) throw new InvalidArgumentError('use a duration such as 30s or 5m.')
  const { leaseMsMin, leaseMsMax } = ContinuationLimits
  if (ms < leaseMsMin || ms > leaseMsMax) {
    throw new InvalidArgumentError(
      `a lease is at least ${leaseMsMin / 1000}s and at most ${leaseMsMax / 60_000}m.`,
    )
  }
  return ms
}

/** A claim's generation: a whole number from 1. */
export function parseGeneration(text: string): number {
  if (!/^[1-9]\d{0,14}$/.test(text)) throw new InvalidArgumentError('use a whole number from 1.')
  return Number(text)
}

export function parseBaseUrl(text: string): string {
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) {
    throw new InvalidArgumentError('use an http(s) URL such as http://127.0.0.1:3000.')
  }
  return text
}

/** A limit in bytes: a whole number from 0. */
export function parseBytes(text: string): number {
  if (!/^(0|[1-9]\d{0,15})$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new InvalidArgumentError('use a whole number of bytes from 0.')
  }
  return Number(text)
}

/** A namespace's ledger retention: a duration within what the admin API takes. */
export function parseRetention(text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined) throw new InvalidArgumentError('use a duration such as 12h or 30d.')
  if (ms < LEDGER_RETENTION_MS_MIN || ms > LEDGER_RETENTION_MS_MAX) {
    throw new InvalidArgumentError(
      `a retention is at least ${LEDGER_RETENTION_MS_MIN / 60_000}m and at most ` +
        `${LEDGER_RETENTION_MS_MAX / 86_400_000}d.`,
    )
  }
  return ms
}
