// Context deltas for `npm run chaos`: the `rememberer` markdown subagent (run by the in-process
// `spawn` provider, so it keeps a durable history), whose scripted model answers with every user
// message it was given; and the ledger audit of the histories its attempts appended.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'
import { historyDigest } from '@baton/contracts'
import { userMessageText, violationTally, type CheckResults } from '@baton/testing/ledger-audit'

export const REMEMBERER = 'rememberer'

const REMEMBERER_SPEC = `---
name: ${REMEMBERER}
description: Repeats every task it has been given
tools: [view]
model: scripted:recall
---
Repeat what you were asked.
`
/** The pause widens the window in which a worker kill or a fault lands mid-turn. */
const RECALL_SCRIPT = { steps: [{ kind: 'recall', delayMs: 300 }] }

export interface RemembererDirs {
  readonly SUBAGENTS_DIR: string
  readonly SCRIPTED_MODELS_DIR: string
  readonly WORKSPACE_DIR: string
}

/** Writes the spec and its script under `root`; the result is env for the API and every worker. */
export async function writeRemembererDirs(root: string): Promise<RemembererDirs> {
  const dirs: RemembererDirs = {
    SUBAGENTS_DIR: join(root, 'subagents'),
    SCRIPTED_MODELS_DIR: join(root, 'scripts'),
    WORKSPACE_DIR: join(root, 'workspace'),
  }
  for (const dir of [dirs.SUBAGENTS_DIR, dirs.SCRIPTED_MODELS_DIR, dirs.WORKSPACE_DIR])
    await mkdir(dir, { recursive: true })
  await writeFile(join(dirs.SUBAGENTS_DIR, `${REMEMBERER}.md`), REMEMBERER_SPEC)
  await writeFile(join(dirs.SCRIPTED_MODELS_DIR, 'recall.json'), JSON.stringify(RECALL_SCRIPT))
  return dirs
}

/** The prompt of delegation `i`'s turn: `a` creates the agent, `b` continues it. */
export const turnPrompt = (i: number, turn: 'a' | 'b'): string => `task-${i}-${turn}`

/** A continuation the client got a 202 for, and the first turn of the same agent. */
export interface ContinuedPair {
  readonly i: number
  readonly firstAttemptId: string
  readonly attemptId: string
}

export type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>

/** Each check's name, with what a violation of it means. */
export const HISTORY_CHECKS = {
  history_gap: "an agent's history seq is not exactly 0..n-1",
  event_seq_field: "an event's own seq differs from its ledger seq",
  event_of_open_attempt: 'an event belongs to a non-terminal attempt or to another agent',
  binding_mismatch: "an attempt's events are not context_event_count rows from context_base",
  digest_mismatch: "an attempt's events do not hash to its context_digest",
  event_of_lost_or_queued_cancel: 'an event belongs to a process_lost or cancelled_queued attempt',
  recall_mismatch:
    'a completed rememberer turn did not see exactly the history below its base, or added nothing',
  continuation_mismatch:
    "a completed continuation's output is not what its first turn's outcome implies",
} as const
export type HistoryCheck = keyof typeof HISTORY_CHECKS

export interface HistoryAudit extends CheckResults<HistoryCheck> {
  /** Rememberer agents in the ledger. */
  readonly agents: number
  /** Rows of `agent_context_events`. */
  readonly events: number
  /** Outcomes of the continuations (second turns) the client got a 202 for. */
  readonly continuationOutcomes: ReadonlyMap<string, number>
}

interface StoredEvent {
  readonly agent_id: string
  readonly seq: number
  readonly attempt_id: string
  readonly event: unknown
}

/** A delegation's prompt (a string, or text blocks) as the child's user message reads. */
function promptText(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt
  if (Array.isArray(prompt))
    return prompt
      .map((b: { text?: unknown }) => (typeof b.text === 'string' ? b.text : ''))
      .join('')
  return JSON.stringify(prompt)
}

/**
 * Audits every agent history in the ledger (not only the rememberer's), then the rememberer's
 * answers against the histories they were resumed from, then the client's continuation pairs.
 */
export async function auditHistory(
  query: Query,
  pairs: readonly ContinuedPair[],
): Promise<HistoryAudit> {
  const { violations, samples, violate, bad } = violationTally(HISTORY_CHECKS)

  const [totals] = await query<{ agents: number; events: number }>(
    `select (select count(*)::int from agents where name = $1) as agents,
            (select count(*)::int from agent_context_events) as events`,
    [REMEMBERER],
  )
  // The primary key rules out duplicates; a gap shows as a max seq beyond count - 1.
  for (const r of await query<{ agent_id: string; n: number; lo: number; hi: number }>(
    `select agent_id, count(*)::int as n, min(seq) as lo, max(seq) as hi
     from agent_context_events group by agent_id
     having min(seq) <> 0 or max(seq) <> count(*) - 1`,
  ))
    violate('history_gap', `agent ${r.agent_id}: ${r.n} events, seq ${r.lo}..${r.hi}`)
  for (const r of await query<{ agent_id: string; seq: number; event_seq: string | null }>(
    `select agent_id, seq, event->>'seq' as event_seq from agent_context_events
     where (event->>'seq') is distinct from seq::text`,
  ))
    violate('event_seq_field', `agent ${r.agent_id} seq ${r.seq}: event says ${r.event_seq}`)
  for (const r of await query<{
    agent_id: string
    seq: number
    attempt_id: string
    status: string
  }>(
    `select e.agent_id, e.seq, a.id as attempt_id, a.status
     from agent_context_events e join attempts a on a.id = e.attempt_id
     where a.status <> 'terminal' or a.agent_id <> e.agent_id`,
  ))
    violate(
      'event_of_open_attempt',
      `agent ${r.agent_id} seq ${r.seq}: attempt ${r.attempt_id} ${r.status}`,
    )
  for (const r of await query<{
    id: string
    context_base: number | null
    context_event_count: number | null
    n: number | null
    lo: number | null
    hi: number | null
  }>(
    `with appended as (
       select attempt_id, count(*)::int as n, min(seq) as lo, max(seq) as hi
       from agent_context_events group by attempt_id)
     select a.id, a.context_base, a.context_event_count, p.n, p.lo, p.hi
     from attempts a left join appended p on p.attempt_id = a.id
     where coalesce(p.n, 0) <> coalesce(a.context_event_count, 0)
        or (a.context_base is null) <> (a.context_event_count is null)
        or (p.n is not null and (p.lo is distinct from a.context_base or p.hi <> p.lo + p.n - 1))`,
  ))
    violate(
      'binding_mismatch',
      `attempt ${r.id}: base ${r.context_base} count ${r.context_event_count}; ` +
        `stored ${r.n ?? 0} events, seq ${r.lo ?? '-'}..${r.hi ?? '-'}`,
    )
  for (const r of await query<{ id: string; failure_category: string | null; n: number }>(
    `select a.id, a.failure_category, count(*)::int as n
     from agent_context_events e join attempts a on a.id = e.attempt_id
     where a.failure_category = 'process_lost'
        or exists (select 1 from attempt_transitions t
                   where t.attempt_id = a.id and t.event = 'cancelled_queued')
     group by a.id, a.failure_category`,
  ))
    violate(
      'event_of_lost_or_queued_cancel',
      `attempt ${r.id} (${r.failure_category ?? '-'}): ${r.n} events`,
    )
  for (const r of await query<{ id: string; context_digest: string | null; events: unknown[] }>(
    `select a.id, a.context_digest, jsonb_agg(e.event order by e.seq) as events
     from agent_context_events e join attempts a on a.id = e.attempt_id
     group by a.id, a.context_digest`,
  ))
    if (r.context_digest !== historyDigest(r.events))
      violate('digest_mismatch', `attempt ${r.id}: ${r.events.length} events`)

  // What each completed rememberer turn answered is every user message it was given: the history
  // below its base (what it was resumed from), then its own prompt.
  const history = new Map<string, StoredEvent[]>()
  for (const e of await query<StoredEvent>(
    `select e.agent_id, e.seq, e.attempt_id, e.event
     from agent_context_events e join agents g on g.id = e.agent_id
     where g.name = $1 order by e.agent_id, e.seq`,
    [REMEMBERER],
  )) {
    const events = history.get(e.agent_id) ?? []
    events.push(e)
    history.set(e.agent_id, events)
  }
  for (const r of await query<{
    id: string
    agent_id: string
    prompt: unknown
    output_preview: string | null
    context_base: number | null
  }>(
    `select a.id, a.agent_id, a.prompt, a.output_preview, a.context_base
     from attempts a join agents g on g.id = a.agent_id
     where g.name = $1 and a.stop_reason = 'completed'`,
    [REMEMBERER],
  )) {
    if (r.context_base === null) {
      violate('recall_mismatch', `attempt ${r.id} completed but appended nothing`)
      continue
    }
    const base = r.context_base
    const seen = (history.get(r.agent_id) ?? [])
      .filter((e) => e.seq < base)
      .flatMap((e) => userMessageText(e.event) ?? [])
    const expected = [...seen, promptText(r.prompt)].join('\n')
    if (r.output_preview !== expected)
      violate(
        'recall_mismatch',
        `attempt ${r.id} base ${base}: answered ${JSON.stringify(r.output_preview)}, ` +
          `history says ${JSON.stringify(expected)}`,
      )
  }

  // The client's view: a continuation is given its first turn only if that turn appended.
  const continuationOutcomes = new Map<string, number>()
  for (const r of await query<{
    i: number
    first_events: number | null
    same_agent: boolean
    stop_reason: string | null
    failure_category: string | null
    output_preview: string | null
  }>(
    `select k.i, f.context_event_count as first_events, f.agent_id = s.agent_id as same_agent,
            s.stop_reason, s.failure_category, s.output_preview
     from unnest($1::int[], $2::uuid[], $3::uuid[]) as k(i, first_id, second_id)
     join attempts f on f.id = k.first_id
     join attempts s on s.id = k.second_id`,
    [pairs.map((p) => p.i), pairs.map((p) => p.firstAttemptId), pairs.map((p) => p.attemptId)],
  )) {
    const outcome = `${r.stop_reason ?? 'not terminal'}/${r.failure_category ?? '-'}`
    continuationOutcomes.set(outcome, (continuationOutcomes.get(outcome) ?? 0) + 1)
    const expected = [
      ...((r.first_events ?? 0) > 0 ? [turnPrompt(r.i, 'a')] : []),
      turnPrompt(r.i, 'b'),
    ].join('\n')
    if (!r.same_agent) violate('continuation_mismatch', `delegation ${r.i}: another agent`)
    else if (r.stop_reason === 'completed' && r.output_preview !== expected)
      violate(
        'continuation_mismatch',
        `delegation ${r.i}: answered ${JSON.stringify(r.output_preview)}, expected ${JSON.stringify(expected)}`,
      )
  }

  return {
    agents: totals?.agents ?? 0,
    events: totals?.events ?? 0,
    violations,
    bad: bad(),
    continuationOutcomes,
    samples,
  }
}
