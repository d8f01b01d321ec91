// The growth bench's retention dimension: a drain of expired history under load. Beside a younger
// history (the history dimension's, or one written here), `--retention` attempts that ended long
// ago are written; the namespace's retention, held off until then, is cut between the two, and the
// workers' reconcilers remove the expired ones in batches. Claims and submit-and-waits are timed
// before and while they do; afterwards every younger attempt must still be there.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { acceptDelegations, claimAttempt, commitTerminal, createDb, type Db } from '@baton/store'
import { sequentialWaits } from './http-load.ts'
import type { ScaleOptions } from './options.ts'
import { growHistory } from './scale-history.ts'
import { p, type ScaleStack } from './scale-stack.ts'
import { round } from './stats.ts'

type Log = (line: string) => void
export type RetentionFigures = Record<string, number | null>

const DAY_S = 86_400
/** The expired history ended from 40 days ago back; the younger one within the last 29 days. */
const EXPIRED_NEWEST_S = 40 * DAY_S
/** The retention the namespace is cut to: between the two. */
const RETENTION_S = 35 * DAY_S
/** Held off while the histories are written and the figures before are taken (ten years). */
const HOLD_MS = 3650 * DAY_S * 1000
/** How long the drain may take before the run fails. */
const DRAIN_DEADLINE_MS = 3_600_000

/**
 * `n` claims, each of an attempt accepted just before (not enqueued: no worker takes it), timed
 * from sent to answered through the ledger's own claim statement, then committed; ascending ms.
 */
async function timedClaims(db: Db, n: number): Promise<number[]> {
  const ms: number[] = []
  for (let i = 0; i < n; i += 1) {
    const attemptId = randomUUID()
    await acceptDelegations(db, [
      {
        namespaceId: 'default',
        sessionId: 'bench-claims',
        name: 'scripted',
        prompt: [{ type: 'text', text: 'p' }],
        metadata: {},
        attemptId,
        newAgentId: randomUUID(),
      },
    ])
    const sent = performance.now()
    const claim = await claimAttempt(db, { attemptId, ownerId: 'bench-claims', leaseTtlMs: 30_000 })
    ms.push(performance.now() - sent)
    if (claim.kind !== 'claimed') throw new Error(`a timed claim was ${claim.kind}`)
    await commitTerminal(db, {
      attemptId,
      ownerId: 'bench-claims',
      ownerGeneration: claim.attempt.ownerGeneration,
      result: { stopReason: 'completed', output: 'ok', failureCategory: null },
    })
  }
  return ms.sort((a, b) => a - b)
}

/** Timed claims beside `--sequential` submit-and-waits through the API (the load). */
async function underLoad(stack: ScaleStack, db: Db, options: ScaleOptions) {
  const [claims, waits] = await Promise.all([
    timedClaims(db, options.sequential * 2),
    sequentialWaits(stack.client, options.sequential, []),
  ])
  return { claims, waits }
}

/** Attempts the workers' reconcilers removed by retention so far (their labelled counter). */
async function removedByRetention(stack: ScaleStack): Promise<number> {
  const pattern = /^baton_reconciler_actions_total\{action="retention"\} (\S+)/m
  const texts = await Promise.all(stack.workerMetricsUrls.map(async (u) => (await fetch(u)).text()))
  return texts.reduce((sum, text) => sum + Number(pattern.exec(text)?.[1] ?? 0), 0)
}

/** Generated attempts (owner `history`) that ended before and since the cut. */
async function generated(stack: ScaleStack) {
  const r = await stack.pool.query<{ expired: string; younger: string }>(
    `select count(*) filter (where terminal_at < now() - $1::int * interval '1 second') as expired,
            count(*) filter (where terminal_at >= now() - $1::int * interval '1 second') as younger
     from attempts where owner_id = 'history'`,
    [RETENTION_S],
  )
  return { expired: Number(r.rows[0]?.expired), younger: Number(r.rows[0]?.younger) }
}

/**
 * The retention dimension on `stack`, whose ledger holds `written` generated attempts (numbered
 * from 0, all younger than the cut). One row.
 */
export async function retentionDrain(
  stack: ScaleStack,
  options: ScaleOptions,
  written: number,
  log: Log,
): Promise<RetentionFigures[]> {
  await stack.pool.query(`update namespaces set ledger_retention_ms = $1`, [HOLD_MS])
  const younger = Math.max(written, options.retention)
  await growHistory(stack.pool, written, younger, log)
  await growHistory(stack.pool, younger, younger + options.retention, log, EXPIRED_NEWEST_S)
  const before = await generated(stack)
  if (before.expired !== options.retention || before.younger !== younger)
    throw new Error(`generated ${JSON.stringify(before)}, not ${options.retention} and ${younger}`)
  const db = createDb({ connectionString: stack.databaseUrl, maxConnections: 1 })
  try {
    const quiet = await underLoad(stack, db, options)
    const removedAtCut = await removedByRetention(stack)
    const cutAt = performance.now()
    await stack.pool.query(`update namespaces set ledger_retention_ms = $1`, [RETENTION_S * 1000])
    log(`bench: retention cut to ${RETENTION_S / DAY_S} days; ${options.retention} attempts due`)
    // Under way: the first batches removed.
    while ((await removedByRetention(stack)) === removedAtCut) {
      if (performance.now() - cutAt > 60_000) throw new Error('retention removed nothing in 60 s')
      await sleep(100)
    }
    const during = await underLoad(stack, db, options)
    const removedDuringLoad = (await removedByRetention(stack)) - removedAtCut
    for (;;) {
      const removed = (await removedByRetention(stack)) - removedAtCut
      if (removed >= options.retention) break
      if (performance.now() - cutAt > DRAIN_DEADLINE_MS)
        throw new Error(`retention removed ${removed} of ${options.retention} in an hour`)
      await sleep(500)
    }
    const drainS = (performance.now() - cutAt) / 1000
    const after = await generated(stack)
    const row = {
      expired_attempts: options.retention,
      younger_attempts: younger,
      claims_timed: quiet.claims.length,
      claim_p50_ms_before: p(quiet.claims, 50),
      claim_p99_ms_before: p(quiet.claims, 99),
      claim_p50_ms_during: p(during.claims, 50),
      claim_p99_ms_during: p(during.claims, 99),
      claim_p99_during_over_before: round(p(during.claims, 99) / p(quiet.claims, 99), 2),
      wait_p50_ms_before: p(quiet.waits, 50),
      wait_p99_ms_before: p(quiet.waits, 99),
      wait_p50_ms_during: p(during.waits, 50),
      wait_p99_ms_during: p(during.waits, 99),
      // The timed claims ran inside the drain unless it had removed everything by their end.
      removed_while_timed: removedDuringLoad,
      drain_s: round(drainS, 1),
      removed_per_s: round(options.retention / drainS, 1),
      expired_left: after.expired,
      younger_removed: before.younger - after.younger,
    }
    log(`bench: retention ${JSON.stringify(row)}`)
    if (after.expired !== 0 || after.younger !== before.younger)
      throw new Error(`retention left ${after.expired} expired and removed younger history`)
    return [row]
  } finally {
    await db.destroy()
  }
}
