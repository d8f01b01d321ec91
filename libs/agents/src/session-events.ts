import type { ModelMessage } from 'ai'
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
