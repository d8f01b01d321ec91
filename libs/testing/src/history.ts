/** One event of an agent's history, as JSON (the shape the runtime logs and the ledger stores). */
export interface HistoryEvent {
  readonly seq: number
  readonly type: string
  readonly [field: string]: unknown
}

/**
 * One balanced turn of an agent's history as the agent runtime logs it — `turn/start`, a user
 * message with `text`, `turn/end` — numbered from `baseSeq`.
 */
export function historyTurn(baseSeq: number, text: string): HistoryEvent[] {
  const turnId = `turn-${baseSeq}`
  return [
    { seq: baseSeq, type: 'turn/start', turnId },
    {
      seq: baseSeq + 1,
      type: 'message',
      turnId,
      steering: false,
      message: { role: 'user', content: [{ type: 'text', text }] },
    },
    { seq: baseSeq + 2, type: 'turn/end', turnId, stopReason: 'completed' },
  ]
}
