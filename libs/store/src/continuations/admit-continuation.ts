import { sql } from 'kysely'
import type { Db } from '../db.ts'

/**
 * Admission of continuations. Every terminal path admits by itself (the `attempts` trigger of
 * migration 0007, in the statement that makes the attempt terminal); this is the same admission
 * called directly, for a retry or a check.
 * Inputs: attempt ids. Outcome per id: its receipt text (canonical JSON of the attempt, the typed
 * cause, the canonical input's size and digest), or `undefined` when it has nothing to admit (not
 * terminal, no parent run, missing).
 * Retry safety: the continuations primary key admits one continuation per attempt; any number of
 * repeats, concurrent or after a crash, answers the first admission's receipt byte for byte.
 */
export async function admitContinuations(
  db: Db,
  attemptIds: readonly string[],
): Promise<(string | undefined)[]> {
  if (attemptIds.length === 0) return []
  const result = await sql<{ receipt: string | null }>`
    select baton_admit_continuation(x.id) as receipt
    from unnest(${attemptIds}::uuid[]) with ordinality as x(id, ord)
    order by x.ord
  `.execute(db)
  return result.rows.map((r) => r.receipt ?? undefined)
}

/**
 * The canonical durable input (RFC 8785 JSON text) of an attempt's continuation, as the ledger
 * derives it now from its own rows: the typed cause and the complete result. `undefined` for an
 * attempt that is not terminal or has no parent run. The one derivation: admission stores exactly
 * this text and binds its digest into the receipt.
 */
export async function durableResultInput(db: Db, attemptId: string): Promise<string | undefined> {
  const result = await sql<{ input: string | null }>`
    select baton_durable_input(${attemptId}::uuid) as input
  `.execute(db)
  return result.rows[0]?.input ?? undefined
}
