import { sql } from 'kysely'
import type { Db } from '../db.ts'

/** A session as the ledger holds it; `profile` is null for a host-managed session. */
export interface SessionRecord {
  readonly id: string
  readonly profile: string | null
  readonly metadata: Readonly<Record<string, unknown>> | null
  /** A hosted session's parent agent (each of its runs is an attempt of this agent). */
  readonly parentAgentId: string | null
  readonly createdAt: Date
  readonly deletedAt: Date | null
}

export const PARENT_AGENT_PREFIX = 'profile:'

/** The agent name of a profile's parent: no markdown spec or profile subagent can take it. */
export function parentAgentName(profile: string): string {
  return `${PARENT_AGENT_PREFIX}${profile}`
}

/** Whether an attempt of this name is a hosted run (an attempt of a session's parent agent). */
export function isParentAgentName(name: string): boolean {
  return name.startsWith(PARENT_AGENT_PREFIX)
}

/**
 * Creates a hosted session with its parent agent, in one statement. Inputs: a fresh session id
 * and agent id (minted by the caller), a profile the caller checked against the catalog.
 * Outcomes: the session, or `exists` when the id is taken (nothing written).
 * Retry safety: a retry with the same id is `exists`.
 */
export async function createHostedSession(
  db: Db,
  input: {
    readonly namespaceId: string
    readonly sessionId: string
    readonly parentAgentId: string
    readonly profile: string
    readonly metadata?: Readonly<Record<string, unknown>> | undefined
  },
): Promise<SessionRecord | 'exists'> {
  const result = await sql<SessionRow>`
    with s as (
      insert into sessions (namespace_id, id, profile, metadata, parent_agent_id)
      values (${input.namespaceId}, ${input.sessionId}, ${input.profile},
              ${input.metadata === undefined ? null : JSON.stringify(input.metadata)}::jsonb,
              ${input.parentAgentId}::uuid)
      on conflict (namespace_id, id) do nothing
      returning *
    ), ag as (
      insert into agents (id, namespace_id, session_id, name)
      select s.parent_agent_id, s.namespace_id, s.id, ${parentAgentName(input.profile)} from s
    )
    select id, profile, metadata, parent_agent_id, created_at, deleted_at from s
  `.execute(db)
  const row = result.rows[0]
  return row === undefined ? 'exists' : toSessionRecord(row)
}

/** Reads one session of a namespace, or `undefined`. */
export async function getSession(
  db: Db,
  namespaceId: string,
  sessionId: string,
): Promise<SessionRecord | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select(['id', 'profile', 'metadata', 'parent_agent_id', 'created_at', 'deleted_at'])
    .where('namespace_id', '=', namespaceId)
    .where('id', '=', sessionId)
    .executeTakeFirst()
  return row === undefined ? undefined : toSessionRecord(row)
}

interface SessionRow {
  id: string
  profile: string | null
  metadata: unknown
  parent_agent_id: string | null
  created_at: Date
  deleted_at: Date | null
}

function toSessionRecord(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    profile: row.profile,
    metadata: (row.metadata ?? null) as Record<string, unknown> | null,
    parentAgentId: row.parent_agent_id,
    createdAt: row.created_at,
    deletedAt: row.deleted_at,
  }
}
