import type { ModelMessage } from 'ai'
import { z } from 'zod'
import { canonicalJson } from '@baton/contracts'
import type { SubagentStopReason } from '@baton/subagents'

/**
 * The in-memory session log of a local agent. `seq` is the event's index: a log (and any seed)
 * is contiguous from 0. A turn is `turn/start`, its messages, then `turn/end`; a turn without its
 * `turn/end` is in flight.
 */
export type SessionEvent =
  | { readonly seq: number; readonly type: 'turn/start'; readonly turnId: string }
  | {
      readonly seq: number
      readonly type: 'message'
      readonly turnId: string
      readonly message: ModelMessage
      /** True for a steering message that arrived while the turn ran. */
      readonly steering: boolean
    }
  | {
      readonly seq: number
      readonly type: 'turn/end'
      readonly turnId: string
      readonly stopReason: SubagentStopReason
      readonly failureCategory?: string
    }

export type SessionEventType = SessionEvent['type']

/**
 * The balanced completed-turn prefix: every event up to and including the last `turn/end`. This is
 * the only part of a live log that is safe to seed a fork with — the in-flight turn is excluded
 * because its tool calls may still be unanswered and its outcome is unknown.
 */
export function completedTurnPrefix(events: readonly SessionEvent[]): SessionEvent[] {
  let lastEnd = -1
  for (let index = events.length - 1; index >= 0; index -= 1) {
    if (events[index]?.type === 'turn/end') {
      lastEnd = index
      break
    }
  }
  return events.slice(0, lastEnd + 1)
}

/** The conversation a log replays to: its messages, in order. */
export function messagesOf(events: readonly SessionEvent[]): ModelMessage[] {
  const messages: ModelMessage[] = []
  for (const event of events) if (event.type === 'message') messages.push(event.message)
  return messages
}

/**
 * Check the seed invariants before a session adopts a seed: contiguous `seq` from 0, turns that
 * open before they close, never nest, and are all closed. Returns a reason, or undefined when valid.
 */
export function seedViolation(events: readonly SessionEvent[]): string | undefined {
  let open: string | undefined
  for (const [index, event] of events.entries()) {
    if (event.seq !== index)
      return `event ${index} has seq ${event.seq}; a seed must be contiguous from 0`
    switch (event.type) {
      case 'turn/start':
        if (open !== undefined) return `turn ${event.turnId} starts inside unfinished turn ${open}`
        open = event.turnId
        break
      case 'message':
        if (open !== event.turnId) return `message at ${index} is outside its turn ${event.turnId}`
        break
      case 'turn/end':
        if (open !== event.turnId)
          return `turn/end at ${index} closes turn ${event.turnId}, which is not open`
        open = undefined
        break
    }
  }
  return open === undefined
    ? undefined
    : `turn ${open} is not finished; a seed must be a balanced completed-turn prefix`
}

const seq = z.number().int().min(0)
const turnId = z.string().min(1)
const contentParts = z.array(z.looseObject({ type: z.string().min(1) }))
const messageSchema = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: z.string() }),
  z.looseObject({ role: z.literal('user'), content: z.union([z.string(), contentParts]) }),
  z.looseObject({ role: z.literal('assistant'), content: z.union([z.string(), contentParts]) }),
  z.looseObject({ role: z.literal('tool'), content: contentParts }),
])
const stopReasons = [
  'completed',
  'aborted',
  'error',
  'max-tokens',
  'refusal',
] as const satisfies readonly SubagentStopReason[]

/**
 * The shape of one `SessionEvent` read back from outside the process (a persisted log). Messages
 * are checked as far as the runtime reads them — a role and content — and otherwise kept as given.
 */
export const sessionEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ seq, type: z.literal('turn/start'), turnId }),
  z.strictObject({
    seq,
    type: z.literal('message'),
    turnId,
    message: messageSchema,
    steering: z.boolean(),
  }),
  z.strictObject({
    seq,
    type: z.literal('turn/end'),
    turnId,
    stopReason: z.enum(stopReasons),
    failureCategory: z.string().optional(),
  }),
])

export type SessionLogCheck =
  | { readonly ok: true; readonly events: SessionEvent[] }
  | { readonly ok: false; readonly reason: string }

/**
 * Validate a log that came from outside the process: every event against `sessionEventSchema`,
 * then the seed invariants (contiguous from 0, balanced).
 */
export function checkSessionLog(log: readonly unknown[]): SessionLogCheck {
  const parsed = z.array(sessionEventSchema).safeParse(log)
  if (!parsed.success) return { ok: false, reason: describeIssue(parsed.error) }
  // The schema checks what the runtime reads; message content is otherwise replayed as given.
  const events = parsed.data as SessionEvent[]
  const violation = seedViolation(events)
  return violation === undefined ? { ok: true, events } : { ok: false, reason: violation }
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0]
  if (issue === undefined) return 'the log is malformed'
  const [index, ...field] = issue.path.map(String)
  if (index === undefined) return `the log is malformed: ${issue.message}`
  const where = field.length === 0 ? '' : ` (${field.join('.')})`
  return `event ${index} is malformed${where}: ${issue.message}`
}

export type HistorySuffix =
  | { readonly ok: true; readonly suffix: SessionEvent[] }
  | { readonly ok: false; readonly reason: string }

/**
 * The new events a resumed child contributes: `log` must start with exactly `seed` (compared as
 * canonical JSON via canonicalJson from @baton/contracts), be a valid balanced log (schema +
 * seedViolation), and only the part after the seed is returned. Both being balanced, the suffix
 * is whole turns; an empty seed makes the whole log the suffix.
 */
export function historySuffix(seed: readonly unknown[], log: readonly unknown[]): HistorySuffix {
  const resumed = checkSessionLog(seed)
  if (!resumed.ok) return { ok: false, reason: `the resumed history is invalid: ${resumed.reason}` }
  if (log.length < seed.length)
    return { ok: false, reason: 'the log is shorter than the resumed history' }
  const checked = checkSessionLog(log)
  if (!checked.ok) return checked
  for (const [index, event] of resumed.events.entries()) {
    if (canonicalJson(event) !== canonicalJson(checked.events[index]))
      return { ok: false, reason: `the log rewrites event ${index} of the resumed history` }
  }
  return { ok: true, suffix: checked.events.slice(seed.length) }
}
