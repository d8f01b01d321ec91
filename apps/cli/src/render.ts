// The human-readable renderings. `--json` bypasses all of this and prints the API's answer.
import type {
  AgentHistoryView,
  AnyAttemptView,
  ContinuationClaim,
  ContinuationConclusion,
  DelegationAccepted,
  DeliveredContent,
  DeliveredResult,
  DeliveryView,
  RunConsumption,
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

/** A run; when it consumed results (an explicit run, a completion), each with its receipt. */
export function renderRun(run: RunView | RunConsumption): string {
  const rows: [string, string][] = [
    ['run', run.runId],
    ['session', run.sessionId],
    ['trigger', run.triggerType],
    ['status', run.status],
    ['cause', run.causeAttemptId ?? '-'],
    ['created', run.createdAt],
    ['ended', run.settledAt ?? '-'],
  ]
  if (run.leaseExpiresAt !== null) rows.push(['lease until', run.leaseExpiresAt])
  const consumed = 'consumed' in run ? run.consumed : []
  return [fields(rows), ...consumed.map(renderDelivered)].join('\n\n')
}

/** A claimed continuation: what to send back to conclude it, its receipt, and its content. */
export function renderClaim(claim: ContinuationClaim): string {
  return fields([
    ['run', claim.runId],
    ['claim token', claim.claim.claimToken],
    ['generation', String(claim.claim.generation)],
    ['lease until', claim.claim.leaseExpiresAt],
  ]).concat('\n', renderDelivered(claim))
}

/** A delivered result: its attempt, receipt, and content (or what stands in for it). */
function renderDelivered(delivered: DeliveredResult): string {
  return fields([
    ['attempt', delivered.attemptId],
    ['receipt', delivered.receipt],
    ['content', contentLine(delivered.content)],
  ])
}

function contentLine(content: DeliveredContent): string {
  switch (content.kind) {
    case 'inline':
      return outputPreview(content.text, false, Buffer.byteLength(content.text))
    case 'artifact':
      return outputPreview(content.text, false, content.bytes)
    case 'expired':
      return `expired: ${content.bytes} bytes, ${content.digest} (artifact ${content.artifactId})`
    case 'corrupt':
      return `not served: the stored content does not match ${content.digest}`
    case 'unavailable':
      return outputPreview(content.preview, true, content.bytes)
    default: {
      const never: never = content
      return JSON.stringify(never)
    }
  }
}

export function renderConclusion(conclusion: ContinuationConclusion): string {
  return fields([
    ['run', conclusion.runId],
    ['attempt', conclusion.attemptId],
    ['delivery', deliveryLine(conclusion.delivery)],
    ['replayed', String(conclusion.replayed)],
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
