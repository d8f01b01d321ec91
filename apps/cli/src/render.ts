// The human-readable renderings. `--json` bypasses all of this and prints the API's answer.
import type {
  AgentHistoryView,
  AnyAttemptView,
  ContinuationClaim,
  ContinuationSettled,
  DelegationAccepted,
  DeliveryView,
  RunView,
} from '@baton/contracts'
import { isTerminalView } from '@baton/contracts'
import { formatElapsed } from './duration.ts'

/** How much of an output preview a human rendering shows; the API's own preview may be longer. */
const OUTPUT_PREVIEW_CHARS = 1_000

/** `label  value` lines with the values aligned; a multi-line value continues under its column. */
function fields(rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([label]) => label.length)) + 2
  return rows
    .map(([label, value]) =>
      `${label.padEnd(width)}${value.split('\n').join(`\n${' '.repeat(width)}`)}`.trimEnd(),
    )
    .join('\n')
}

function outputPreview(output: string, truncatedByApi: boolean, bytes: number): string {
  const cut = output.length > OUTPUT_PREVIEW_CHARS
  const shown = cut ? output.slice(0, OUTPUT_PREVIEW_CHARS) : output
  return cut || truncatedByApi ? `${shown}…\n(preview of ${bytes} bytes)` : shown
}

/**
 * An attempt: its ids and status, its steering progress once it was steered, and once terminal its
 * stop reason, category, the artifact that holds the whole output, its delivery to a parent run,
 * and the output.
 */
export function renderAttempt(view: AnyAttemptView): string {
  const rows: [string, string][] = [
    ['attempt', view.attemptId],
    ['agent', view.agentId],
    ['session', view.sessionId],
    ['name', view.name],
    ['status', view.cancelRequested ? `${view.status} (cancel requested)` : view.status],
  ]
  const { accepted, delivered } = view.steering
  if (accepted > 0) rows.push(['steering', `${accepted} accepted, ${delivered} delivered`])
  if (isTerminalView(view)) {
    rows.push(['stop', view.stopReason], ['category', view.failureCategory ?? '-'])
    if (view.artifact !== null) rows.push(['artifact', view.artifact.artifactId])
    if (view.delivery !== undefined) rows.push(['delivery', deliveryLine(view.delivery)])
    rows.push(['output', outputPreview(view.output, view.outputTruncated, view.outputBytes)])
  }
  return fields(rows)
}

export function renderAccepted(accepted: DelegationAccepted, sessionId: string): string {
  return fields([
    ['attempt', accepted.attemptId],
    ['agent', accepted.agentId],
    ['session', sessionId],
    ['status', accepted.status],
  ])
}

export function renderHistory(context: AgentHistoryView): string {
  const head = fields([
    ['agent', context.agentId],
    ['session', context.sessionId],
    ['name', context.name],
    ['events', String(context.events.length)],
  ])
  const events = context.events.map(
    (e) => `${String(e.seq).padStart(4)}  ${e.attemptId}  ${JSON.stringify(e.event)}`,
  )
  return [head, ...events].join('\n')
}

function deliveryLine(delivery: DeliveryView): string {
  const run = delivery.consumingRunId === null ? '' : ` (run ${delivery.consumingRunId})`
  const suppressed = delivery.suppression === null ? '' : `: ${delivery.suppression.reason}`
  return `${delivery.state}${suppressed}${run}`
}

export function renderRun(run: RunView): string {
  return fields([
    ['run', run.runId],
    ['session', run.sessionId],
    ['trigger', run.triggerType],
    ['status', run.status],
    ['cause', run.causeAttemptId ?? '-'],
    ['created', run.createdAt],
    ['settled', run.settledAt ?? '-'],
  ])
}

/** A claimed continuation: what to send back to settle it, its receipt, and its input's start. */
export function renderClaim(claim: ContinuationClaim): string {
  const inputBytes = Buffer.byteLength(claim.input)
  return fields([
    ['run', claim.runId],
    ['attempt', claim.attemptId],
    ['claim token', claim.claim.claimToken],
    ['generation', String(claim.claim.generation)],
    ['lease until', claim.claim.leaseExpiresAt],
    ['receipt', claim.receipt],
    ['input', outputPreview(claim.input, false, inputBytes)],
  ])
}

export function renderSettled(settled: ContinuationSettled): string {
  return fields([
    ['run', settled.runId],
    ['attempt', settled.attemptId],
    ['delivery', deliveryLine(settled.delivery)],
    ['replayed', String(settled.replayed)],
  ])
}

/** A rendering of any other accepted action (`cancel`, `steer`): its answer's fields. */
export function renderAnswer(answer: Readonly<Record<string, unknown>>): string {
  return fields(Object.entries(answer).map(([k, v]) => [k, String(v)]))
}

/** Erases the terminal's current line and returns the cursor to its start. */
export const CLEAR_LINE = '\r\x1b[2K'

/** One frame of the live progress line: status, elapsed time, and the attempt once known. */
export function progressFrame(frame: {
  readonly status: string
  readonly elapsedMs: number
  readonly attemptId: string | undefined
}): string {
  const attempt = frame.attemptId === undefined ? '' : `  attempt ${frame.attemptId}`
  return `${CLEAR_LINE}${frame.status}  ${formatElapsed(frame.elapsedMs)}${attempt}`
}
