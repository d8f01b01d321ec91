import { sql } from 'kysely'
import type { Db } from '../db.ts'
import { sessionBudgetUse } from '../runs/hosted-runs.ts'
import {
  acceptDelegations,
  type AcceptDelegationInput,
  type AcceptDelegationOutcome,
} from './accept-delegations.ts'

/** What one more child of a session would count against its budgets. */
export interface ChildBudgetUse {
  /** Children its parent run made (0 for a delegation without a parent run). */
  readonly ofRun: number
  /** Children of the session not finished. */
  readonly running: number
  /** Tokens the session's finished children spent. */
  readonly childTokens: number
  /** The depth the child would have: 1, or one more than its parent attempt's. */
  readonly depth: number
}

export type BudgetedAcceptOutcome<R> =
  AcceptDelegationOutcome | { readonly kind: 'over_budget'; readonly refusal: R }

/**
 * Accepts delegations into one session whose profile bounds its delegation: under a lock on the
 * session's row, reads what the session has used, asks `refuse` about each input in order
 * (counting those before it as admitted), and accepts the rest through the one admission
 * statement, all in one transaction. Concurrent admissions into the session (HTTP and the
 * parent's `delegate` tool alike) take the lock in turn, and each reads what the one before it
 * committed, so no budget is overshot. Sessions without budgets never come here: their accepts
 * stay batched and lock nothing but what the admission statement locks.
 * Outcomes per input: `over_budget` with what `refuse` answered (nothing written), or the
 * admission statement's outcome.
 * Retry safety: as `acceptDelegations` (a keyed retry replays; a replayed key is counted against
 * the budgets like a new one, so a replay past a budget is refused, which writes nothing either).
 */
export async function acceptWithinBudgets<R>(
  db: Db,
  session: { readonly namespaceId: string; readonly sessionId: string },
  inputs: readonly AcceptDelegationInput[],
  refuse: (use: ChildBudgetUse, input: AcceptDelegationInput) => R | undefined,
): Promise<BudgetedAcceptOutcome<R>[]> {
  if (inputs.length === 0) return []
  return db.transaction().execute(async (trx) => {
    // `for no key update`: the rows that reference the session (attempts, agents, runs) take
    // `for key share` on it and do not wait for this lock; the admissions of the session, which
    // read it `for share` (the deletion fence) or lock it here, do.
    await sql`
      select 1 from sessions
      where namespace_id = ${session.namespaceId} and id = ${session.sessionId}
      for no key update
    `.execute(trx)
    const uses = new Map<string, ChildBudgetUse | undefined>()
    const admittedOfRun = new Map<string | undefined, number>()
    let admitted = 0
    const checked: (
      AcceptDelegationInput | { readonly kind: 'over_budget'; readonly refusal: R }
    )[] = []
    for (const input of inputs) {
      const key = JSON.stringify([input.parentRunId ?? null, input.parentAttemptId ?? null])
      if (!uses.has(key))
        uses.set(
          key,
          await sessionBudgetUse(trx, {
            ...session,
            runId: input.parentRunId,
            parentAttemptId: input.parentAttemptId,
          }),
        )
      const use = uses.get(key)
      // No session yet: the admission statement creates it, and it has no profile.
      const refusal =
        use === undefined
          ? undefined
          : refuse(
              {
                ofRun: use.ofRun + (admittedOfRun.get(input.parentRunId) ?? 0),
                running: use.running + admitted,
                childTokens: use.childTokens,
                depth: use.depth,
              },
              input,
            )
      if (refusal !== undefined) {
        checked.push({ kind: 'over_budget', refusal })
        continue
      }
      admitted += 1
      admittedOfRun.set(input.parentRunId, (admittedOfRun.get(input.parentRunId) ?? 0) + 1)
      checked.push(input)
    }
    const within = checked.filter((c): c is AcceptDelegationInput => !('kind' in c))
    const outcomes = await acceptDelegations(trx, within)
    let next = 0
    return checked.map((c): BudgetedAcceptOutcome<R> => {
      if ('kind' in c) return c
      const outcome = outcomes[next]
      next += 1
      if (outcome === undefined)
        throw new Error('the ledger answered fewer items than it was given')
      return outcome
    })
  })
}
