import { sql, type RawBuilder } from 'kysely'
import type { AgentHistoryView } from '@baton/contracts'
import type { Db } from '../db.ts'
import type { ReadScope } from './get-attempt.ts'
import { TRANSIENT_READ_RETRY, retryTransient } from '../pg-errors.ts'
import { fromStoredJson } from './stored-json.ts'

/**
 * Reads an agent's durable history, in `seq` order, or `undefined` for an unknown agent (or one of another namespace than `scope`'s). Only
 * events appended by successful terminal commits exist, so this is exactly what a continuation of
 * the agent resumes from. Idempotent read: retried once on a fresh connection after a dead one.
 */
export async function getAgentHistory(
  db: Db,
  agentId: string,
  scope: ReadScope = {},
): Promise<AgentHistoryView | undefined> {
  return retryTransient(async () => {
    const agent = await db
      .selectFrom('agents')
      .select(['id', 'session_id', 'name'])
      .where('id', '=', agentId)
      .$if(scope.namespaceId !== undefined, (q) =>
        q.where('namespace_id', '=', scope.namespaceId ?? ''),
      )
      .executeTakeFirst()
    if (agent === undefined) return undefined
    const events = await db
      .selectFrom('agent_context_events')
      .select(['seq', 'attempt_id', 'event'])
      .where('agent_id', '=', agentId)
      .orderBy('seq')
      .execute()
    return {
      agentId: agent.id,
      sessionId: agent.session_id,
      name: agent.name,
      events: events.map((e) => ({
        seq: e.seq,
        attemptId: e.attempt_id,
        event: fromStoredJson(e.event),
      })),
    }
  }, TRANSIENT_READ_RETRY)
}

/**
 * The size of an agent's history in bytes (its events' JSON text): what its last event recorded,
 * read by the primary key from its end.
 */
export function historyBytes(agentId: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`coalesce((
    select total_bytes from agent_context_events where agent_id = ${agentId}
    order by seq desc limit 1
  ), 0)`
}

/** The length of an agent's history: its next event's `seq` (the primary key keeps it gap-free). */
export function historyLength(agentId: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(
    select coalesce(max(seq) + 1, 0)::int from agent_context_events where agent_id = ${agentId}
  )`
}
