import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { ARTIFACT_CHUNK_BYTES, chunkDigest, resultDigest } from '@baton/contracts'
import { describe, eventually, expect, ledgerCopiesOf, test } from '@baton/testing'
import { createDb } from '../../src/db.ts'
import { stageArtifact } from '../../src/artifacts/stage-artifact.ts'
import type { Db } from '../../src/db.ts'
import { getAgentHistory } from '../../src/attempts/agent-history.ts'
import { claimAttempt } from '../../src/attempts/claim-attempt.ts'
import { commitTerminal, commitTerminals } from '../../src/attempts/commit-terminal.ts'
import { getAttempt } from '../../src/attempts/get-attempt.ts'
import { commitProcessLoss } from '../../src/attempts/reconcile-process-loss.ts'
import {
  buildTerminalProjection,
  processLossProjection,
} from '../../src/attempts/terminal-record.ts'
import { requestCancel } from '../../src/attempts/request-cancel.ts'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { expireArtifacts } from '../../src/artifacts/expire-artifacts.ts'
import { loadArtifact } from '../../src/artifacts/load-artifact.ts'
import { loadAttemptResult } from '../../src/artifacts/load-attempt-result.ts'
import { DEFAULT_RESULT_POLICY, type ResultPolicy } from '../../src/artifacts/result-policy.ts'

/** A small inline bound and generous limits; each test overrides what it is about. */
const policy = (over: Partial<ResultPolicy> = {}): ResultPolicy => ({
  ...DEFAULT_RESULT_POLICY,
  inlineBytes: 8,
  ...over,
})

const completed = (output: string) => ({ stopReason: 'completed', output, failureCategory: null })

/**
 * A running attempt claimed by `w1`: the fence its commit needs. Each test works in a namespace
 * of its own (the file's tests share one database), `default` unless it names one.
 */
async function running(db: Db, namespaceId = 'default') {
  const attemptId = randomUUID()
  await sql`insert into namespaces (id) values (${namespaceId}) on conflict do nothing`.execute(db)
  const [accepted] = await acceptDelegations(db, [
    {
      namespaceId,
      sessionId: 'artifacts',
      name: 'scripted',
      prompt: [{ type: 'text', text: 'hello' }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    },
  ])
  if (accepted?.kind !== 'accepted') throw new Error(accepted?.kind)
  const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 30_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  return { attemptId, ownerId: 'w1', ownerGeneration: claim.attempt.ownerGeneration }
}

async function usage(db: Db, namespaceId: string): Promise<number> {
  const r = await sql<{ bytes: string }>`
    select coalesce(sum(artifact_bytes), 0) as bytes from namespace_usage
    where namespace_id = ${namespaceId}
  `.execute(db)
  return Number(r.rows[0]?.bytes)
}

async function liveArtifactBytes(db: Db, namespaceId: string): Promise<number> {
  const r = await sql<{ bytes: string }>`
    select coalesce(sum(bytes), 0) as bytes from artifacts
    where expired_at is null and namespace_id = ${namespaceId}
  `.execute(db)
  return Number(r.rows[0]?.bytes)
}

/** Commits `count` outputs whose artifacts are due at once (retention 0). */
async function commitDueArtifacts(db: Db, ns: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const fence = await running(db, ns)
    const result = completed(`r${i}`.repeat(10))
    await commitTerminal(db, { ...fence, result }, policy({ retentionMs: 0 }))
  }
}

/** Expires everything due (left by earlier tests of the file): a clean start for counting. */
async function drainExpiry(db: Db): Promise<void> {
  while ((await expireArtifacts(db, { limit: 100 })).expired > 0);
}

describe('artifacts: results above the inline bound', () => {
  test('a large output is committed with its artifact; the preview never splits a character; the load round-trips', async ({
    db,
  }) => {
    const ns = 'ns-1'
    const fence = await running(db, ns)
    const output = 'abcdef😀 and more'
    expect(await commitTerminal(db, { ...fence, result: completed(output) }, policy())).toBe(
      'committed',
    )
    const record = await getAttempt(db, fence.attemptId)
    const bytes = Buffer.byteLength(output)
    expect(record).toMatchObject({
      output: 'abcdef',
      outputTruncated: true,
      outputBytes: bytes,
      outputDigest: resultDigest(output),
      artifact: { bytes, digest: resultDigest(output) },
    })
    const load = await loadArtifact(db, ns, record?.artifact?.artifactId ?? '')
    expect(load.kind === 'content' && load.content.toString('utf8')).toBe(output)
    // Another namespace's load answers exactly like a missing artifact.
    expect(await loadArtifact(db, 'other', record?.artifact?.artifactId ?? '')).toEqual({
      kind: 'missing',
    })
    expect(await loadAttemptResult(db, ns, fence.attemptId)).toEqual({
      kind: 'complete',
      output,
      bytes,
      digest: resultDigest(output),
      artifactId: record?.artifact?.artifactId,
    })
    expect(await usage(db, ns)).toBe(bytes)
  })

  test('U+0000 and lone surrogates never fail a commit: one poison output in a batch of 50 commits with the rest', async ({
    db,
  }) => {
    const ns = 'ns-2'
    const fences = []
    for (let i = 0; i < 50; i += 1) fences.push(await running(db, ns))
    const outputs = fences.map((_, i) => (i === 17 ? 'a\u0000b' : i === 33 ? 'x\ud800' : `ok ${i}`))
    const outcomes = await commitTerminals(
      db,
      fences.map((fence, i) => ({ ...fence, result: completed(outputs[i] ?? '') })),
    )
    expect(outcomes).toEqual(fences.map(() => 'committed'))
    const poison = await getAttempt(db, fences[17]?.attemptId ?? '')
    expect(poison).toMatchObject({ output: 'a\uFFFDb', outputTruncated: true, outputBytes: 3 })
    expect(await loadAttemptResult(db, ns, fences[17]?.attemptId ?? '')).toMatchObject({
      kind: 'complete',
      output: 'a\u0000b',
    })
    // A lone surrogate is stored as U+FFFD, and the digest is over those bytes.
    expect(await getAttempt(db, fences[33]?.attemptId ?? '')).toMatchObject({
      output: 'x\uFFFD',
      outputTruncated: false,
      outputDigest: resultDigest('x\uFFFD'),
    })
    expect(await getAttempt(db, fences[0]?.attemptId ?? '')).toMatchObject({ output: 'ok 0' })
  })

  test("a child's history with U+0000, the escape character and a lone surrogate reads back exactly", async ({
    db,
  }) => {
    const ns = 'ns-3'
    const fence = await running(db, ns)
    const record = await getAttempt(db, fence.attemptId)
    const events = [
      { type: 'message', text: 'nul \u0000 and \uFDD0 and \uFDD00 and \uFDD0\uFDD0', 'k\u0000': 1 },
      { type: 'tool-result', output: ['\u0000\u0000', 'lone \ud800'] },
    ]
    const result = { ...completed('done'), history: { baseSeq: 0, events } }
    expect(await commitTerminal(db, { ...fence, result })).toBe('committed')
    const history = await getAgentHistory(db, record?.agentId ?? '')
    expect(history?.events.map((e) => e.event)).toEqual([
      events[0],
      { type: 'tool-result', output: ['\u0000\u0000', 'lone \uFFFD'] },
    ])
    expect(await commitTerminal(db, { ...fence, result })).toBe('replayed')
  })
})

describe('artifact quotas', () => {
  test('an output above the per-artifact limit ends error / quota_exceeded with nothing stored; its retry is replayed', async ({
    db,
  }) => {
    const ns = 'ns-4'
    const fence = await running(db, ns)
    const limits = policy({ artifactMaxBytes: 10 })
    const result = completed('x'.repeat(11))
    expect(await commitTerminal(db, { ...fence, result }, limits)).toBe('committed')
    expect(await getAttempt(db, fence.attemptId)).toMatchObject({
      status: 'terminal',
      stopReason: 'error',
      failureCategory: 'quota_exceeded',
      output: '',
      artifact: null,
    })
    const rows = await sql`select id from artifacts where namespace_id = ${ns}`.execute(db)
    expect(rows.rows).toEqual([])
    expect(await usage(db, ns)).toBe(0)
    // The retry after a lost answer is recognised by the stored fingerprint, which binds the
    // refused output's size and digest: another oversized output is not its retry.
    expect(await commitTerminal(db, { ...fence, result }, limits)).toBe('replayed')
    expect(await commitTerminal(db, { ...fence, result: completed('other') }, limits)).toBe(
      'refused',
    )
    expect(await commitTerminal(db, { ...fence, result: completed('z'.repeat(11)) }, limits)).toBe(
      'refused',
    )
    expect(await commitTerminal(db, { ...fence, result: completed('x'.repeat(12)) }, limits)).toBe(
      'refused',
    )
  })

  test('concurrent commits that together exceed the namespace limit: exactly the ones that fit win, and usage is the sum of live artifacts', async ({
    db,
  }) => {
    const ns = 'ns-5'
    const limits = policy({ namespaceMaxBytes: 1000 })
    const fences = []
    for (let i = 0; i < 8; i += 1) fences.push(await running(db, ns))
    const outcomes = await Promise.all(
      fences.map((fence) =>
        commitTerminal(db, { ...fence, result: completed('y'.repeat(300)) }, limits),
      ),
    )
    expect(outcomes).toEqual(fences.map(() => 'committed'))
    const records = await Promise.all(fences.map((f) => getAttempt(db, f.attemptId)))
    const winners = records.filter((r) => r?.artifact !== null)
    const refused = records.filter((r) => r?.failureCategory === 'quota_exceeded')
    expect(winners).toHaveLength(3)
    expect(refused).toHaveLength(5)
    expect(await usage(db, ns)).toBe(900)
    expect(await liveArtifactBytes(db, ns)).toBe(900)
  })

  test('two concurrent commits that together exceed the namespace limit: one wins', async ({
    db,
  }) => {
    const ns = 'ns-6'
    const limits = policy({ namespaceMaxBytes: 1000 })
    const [a, b] = [await running(db, ns), await running(db, ns)]
    const result = completed('z'.repeat(600))
    await Promise.all([a, b].map((fence) => commitTerminal(db, { ...fence, result }, limits)))
    const records = await Promise.all([a, b].map((f) => getAttempt(db, f.attemptId)))
    expect(records.map((r) => r?.failureCategory ?? 'completed').sort()).toEqual([
      'completed',
      'quota_exceeded',
    ])
    expect(await usage(db, ns)).toBe(600)
    expect(await liveArtifactBytes(db, ns)).toBe(600)
  })

  test('a replayed commit counts its bytes once, and is classified by its fingerprint even after expiry', async ({
    db,
  }) => {
    const ns = 'ns-7'
    await drainExpiry(db)
    const fence = await running(db, ns)
    const limits = policy({ retentionMs: 0 })
    const result = completed('w'.repeat(100))
    expect(await commitTerminal(db, { ...fence, result }, limits)).toBe('committed')
    expect(await commitTerminal(db, { ...fence, result }, limits)).toBe('replayed')
    expect(await usage(db, ns)).toBe(100)
    expect(await expireArtifacts(db, { limit: 10 })).toEqual({
      expired: 1,
      backfilled: 0,
      discarded: 0,
    })
    expect(await commitTerminal(db, { ...fence, result }, limits)).toBe('replayed')
    expect(await commitTerminal(db, { ...fence, result: completed('v'.repeat(100)) }, limits)).toBe(
      'refused',
    )
    expect(await usage(db, ns)).toBe(0)
  })

  test('the namespace limit counts only unexpired artifacts, even before expiry freed them', async ({
    db,
  }) => {
    const ns = 'ns-8'
    const [a, b] = [await running(db, ns), await running(db, ns)]
    const result = completed('u'.repeat(600))
    await commitTerminal(db, { ...a, result }, policy({ namespaceMaxBytes: 1000, retentionMs: 0 }))
    await commitTerminal(db, { ...b, result }, policy({ namespaceMaxBytes: 1000 }))
    expect((await getAttempt(db, b.attemptId))?.artifact).not.toBeNull()
  })
})

describe('artifact retention', () => {
  test('expiry deletes the content, keeps the evidence and frees the usage; a later load is expired', async ({
    db,
  }) => {
    const ns = 'ns-9'
    await drainExpiry(db)
    const [due, kept] = [await running(db, ns), await running(db, ns)]
    const output = 'retained output'
    await commitTerminal(db, { ...due, result: completed(output) }, policy({ retentionMs: 0 }))
    await commitTerminal(db, { ...kept, result: completed(output) }, policy())
    const before = await getAttempt(db, due.attemptId)
    const fingerprint = await fingerprintOf(db, due.attemptId)
    expect(await expireArtifacts(db, { limit: 10 })).toEqual({
      expired: 1,
      backfilled: 0,
      discarded: 0,
    })

    const after = await getAttempt(db, due.attemptId)
    expect(after).toEqual(before)
    expect(await fingerprintOf(db, due.attemptId)).toBe(fingerprint)
    const artifactId = after?.artifact?.artifactId ?? ''
    expect(await loadArtifact(db, ns, artifactId)).toMatchObject({
      kind: 'expired',
      artifact: { bytes: Buffer.byteLength(output), digest: resultDigest(output) },
    })
    expect(await loadAttemptResult(db, ns, due.attemptId)).toMatchObject({
      kind: 'expired',
      artifact: { artifactId, digest: resultDigest(output) },
    })
    const stored = await sql<{ n: number }>`
      select count(*)::int as n from artifact_chunks
      where upload_id = (select upload_id from artifacts where id = ${artifactId})
    `.execute(db)
    expect(stored.rows).toEqual([{ n: 0 }])
    expect(await usage(db, ns)).toBe(Buffer.byteLength(output))
    expect(await liveArtifactBytes(db, ns)).toBe(Buffer.byteLength(output))
    expect(
      (
        await loadArtifact(
          db,
          ns,
          (await getAttempt(db, kept.attemptId))?.artifact?.artifactId ?? '',
        )
      ).kind,
    ).toBe('content')
  })

  test('two expiry runners never free an artifact twice: the second skips the batch the first holds', async ({
    db,
  }) => {
    const ns = 'ns-runners'
    await drainExpiry(db)
    const count = 5
    await commitDueArtifacts(db, ns, count)
    const lockWaiters = async () => {
      const waiting = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
      `.execute(db)
      return waiting.rows[0]?.n ?? 0
    }
    const runs = await db.transaction().execute(async (trx) => {
      // Holding the namespace's usage row parks the first runner right after it took its batch.
      await sql`select 1 from namespace_usage where namespace_id = ${ns} for update`.execute(trx)
      const first = expireArtifacts(db, { limit: 10 })
      await eventually(async () => ((await lockWaiters()) > 0 ? true : undefined), {
        what: 'the first runner to wait for the usage row',
      })
      const second = expireArtifacts(db, { limit: 10 })
      let secondSettled = false
      second.then(
        () => (secondSettled = true),
        () => (secondSettled = true),
      )
      // The second runner either finishes (nothing left for it) or parks behind the first.
      await eventually(
        async () => (secondSettled || (await lockWaiters()) > 1 ? true : undefined),
        { what: 'the second runner to finish or wait' },
      )
      return { first, second }
    })
    const [first, second] = await Promise.allSettled([runs.first, runs.second])
    expect(second).toEqual({
      status: 'fulfilled',
      value: { expired: 0, backfilled: 0, discarded: 0 },
    })
    expect(first).toEqual({
      status: 'fulfilled',
      value: { expired: count, backfilled: 0, discarded: 0 },
    })
    expect(await usage(db, ns)).toBe(0)
  })

  test('many expiry runners at once expire everything once', async ({ db }) => {
    const ns = 'ns-many-runners'
    await drainExpiry(db)
    const count = 24
    await commitDueArtifacts(db, ns, count)
    const runner = async () => {
      let expired = 0
      for (;;) {
        const report = await expireArtifacts(db, { limit: 3 })
        if (report.expired === 0) return expired
        expired += report.expired
      }
    }
    const totals = await Promise.all([runner(), runner(), runner(), runner()])
    expect(totals.reduce((x, y) => x + y, 0)).toBe(count)
    expect(await usage(db, ns)).toBe(0)
  })

  test('a tampered content row fails its load with the integrity outcome, never its bytes', async ({
    db,
  }) => {
    const ns = 'ns-11'
    const fence = await running(db, ns)
    await commitTerminal(db, { ...fence, result: completed('the true output') }, policy())
    const artifactId = (await getAttempt(db, fence.attemptId))?.artifact?.artifactId ?? ''
    await sql`
      update artifact_chunks set content = ${Buffer.from('the fake output')}
      where upload_id = (select upload_id from artifacts where id = ${artifactId})
    `.execute(db)
    expect(await loadArtifact(db, ns, artifactId)).toMatchObject({ kind: 'corrupt' })
    expect(await loadAttemptResult(db, ns, fence.attemptId)).toMatchObject({
      kind: 'corrupt',
    })
  })

  test('expiry backfills a missing fingerprint while the projection is complete; expired evidence without one stays fail-closed', async ({
    db,
  }) => {
    const ns = 'ns-12'
    await drainExpiry(db)
    const limits = policy({ retentionMs: 0 })
    const result = completed('legacy output')
    const [legacy, late] = [await running(db, ns), await running(db, ns)]
    await commitTerminal(db, { ...legacy, result }, limits)
    await commitTerminal(db, { ...late, result }, limits)
    const original = await fingerprintOf(db, legacy.attemptId)
    // Baton's own ledger requires a fingerprint of every terminal attempt; evidence written
    // without one (by a store that did not) is simulated by lifting that constraint, restored
    // (validated) before the test ends, so the file's later tests run under it.
    const constraint = await constraintDefinition(db, 'attempts_terminal_complete')
    const lateFingerprint = await fingerprintOf(db, late.attemptId)
    await sql`alter table attempts drop constraint attempts_terminal_complete`.execute(db)
    try {
      await sql`update attempts set fingerprint = null where id = ${legacy.attemptId}`.execute(db)
      const expiry = await expireArtifacts(db, { limit: 10 })
      expect(expiry).toEqual({ expired: 2, backfilled: 1, discarded: 0 })
      expect(await fingerprintOf(db, legacy.attemptId)).toBe(original)
      expect(await commitTerminal(db, { ...legacy, result }, limits)).toBe('replayed')

      // Already expired and without a fingerprint: nothing can prove a replay exact.
      await sql`update attempts set fingerprint = null where id = ${late.attemptId}`.execute(db)
      expect(await expireArtifacts(db, { limit: 10 })).toEqual({
        expired: 0,
        backfilled: 0,
        discarded: 0,
      })
      expect(await fingerprintOf(db, late.attemptId)).toBeNull()
      expect(await commitTerminal(db, { ...late, result }, limits)).toBe('refused')
    } finally {
      for (const [attemptId, fingerprint] of [
        [legacy.attemptId, original],
        [late.attemptId, lateFingerprint],
      ] as const) {
        await sql`update attempts set fingerprint = coalesce(fingerprint, ${fingerprint})
                  where id = ${attemptId}`.execute(db)
      }
      await sql`alter table attempts add constraint attempts_terminal_complete ${sql.raw(constraint)}`.execute(
        db,
      )
    }
    expect(await constraintDefinition(db, 'attempts_terminal_complete')).toBe(constraint)
  })
})

async function constraintDefinition(db: Db, name: string): Promise<string> {
  const r = await sql<{ definition: string }>`
    select pg_get_constraintdef(oid) as definition from pg_constraint
    where conrelid = 'attempts'::regclass and conname = ${name} and convalidated
  `.execute(db)
  const definition = r.rows[0]?.definition
  if (definition === undefined) throw new Error(`no validated constraint ${name}`)
  return definition
}

async function fingerprintOf(db: Db, attemptId: string): Promise<string | null> {
  const r = await sql<{ fingerprint: string | null }>`
    select fingerprint from attempts where id = ${attemptId}
  `.execute(db)
  return r.rows[0]?.fingerprint ?? null
}

describe('the terminal fingerprint', () => {
  test('it binds the trace id: a retry with another trace is refused', async ({ db }) => {
    const fence = await running(db, 'ns-trace')
    const result = completed('traced output beyond the bound')
    expect(await commitTerminal(db, { ...fence, result, traceId: 't-1' }, policy())).toBe(
      'committed',
    )
    expect(await commitTerminal(db, { ...fence, result, traceId: 't-1' }, policy())).toBe(
      'replayed',
    )
    expect(await commitTerminal(db, { ...fence, result, traceId: 't-2' }, policy())).toBe('refused')
    expect(await commitTerminal(db, { ...fence, result }, policy())).toBe('refused')
  })

  test('process-loss synthesis stores the same kind of fingerprint, trace id included', async ({
    db,
  }) => {
    const attemptId = randomUUID()
    const [accepted] = await acceptDelegations(db, [
      {
        namespaceId: 'default',
        sessionId: 'lost',
        name: 'scripted',
        prompt: 'x',
        metadata: { traceId: 'trace-lost' },
        attemptId,
        newAgentId: randomUUID(),
      },
    ])
    if (accepted?.kind !== 'accepted') throw new Error(String(accepted?.kind))
    const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 1 })
    if (claim.kind !== 'claimed') throw new Error(claim.kind)
    await eventually(
      async () =>
        (await commitProcessLoss(db, [{ attemptId, ownerGeneration: 1 }])).length === 1
          ? true
          : undefined,
      { what: 'the lease to expire' },
    )
    expect(await fingerprintOf(db, attemptId)).toBe(
      processLossProjection(attemptId, 1, 'trace-lost').fingerprint,
    )
    expect(await fingerprintOf(db, attemptId)).not.toBe(
      processLossProjection(attemptId, 1).fingerprint,
    )
  })
})

describe('evidence a read checks', () => {
  test("an artifact is checked against the digest the attempt's fingerprint binds, not only its own stored digest", async ({
    db,
  }) => {
    const ns = 'ns-bound'
    const fence = await running(db, ns)
    const output = 'the true output, in an artifact'
    await commitTerminal(db, { ...fence, result: completed(output) }, policy())
    const artifactId = (await getAttempt(db, fence.attemptId))?.artifact?.artifactId ?? ''
    expect((await loadAttemptResult(db, ns, fence.attemptId)).kind).toBe('complete')
    // Content and the artifact's own digest replaced together: consistent with each other, so the
    // artifact's own check passes, but not what the terminal commit bound.
    const forged = 'a forged output, self-consistent'
    await sql`
      update artifact_chunks set content = ${Buffer.from(forged)},
                                 digest = ${chunkDigest(0, Buffer.from(forged))}
      where upload_id = (select upload_id from artifacts where id = ${artifactId})
    `.execute(db)
    await sql`
      update artifacts set digest = ${resultDigest(forged)}, bytes = ${Buffer.byteLength(forged)}
      where id = ${artifactId}
    `.execute(db)
    // The artifact route's load checks the same binding: neither a complete nor a range read
    // serves the forged bytes.
    expect((await loadArtifact(db, ns, artifactId)).kind).toBe('corrupt')
    expect((await loadArtifact(db, ns, artifactId, () => ({ start: 0, end: 0 }))).kind).toBe(
      'corrupt',
    )
    expect(await loadAttemptResult(db, ns, fence.attemptId)).toEqual({
      kind: 'corrupt',
      artifactId,
      bytes: Buffer.byteLength(output),
      digest: resultDigest(output),
    })
    // The attempt's digest moved with them: its fingerprint no longer matches what is stored.
    await sql`
      update attempts set output_digest = ${resultDigest(forged)},
                          output_bytes = ${Buffer.byteLength(forged)}
      where id = ${fence.attemptId}
    `.execute(db)
    expect((await loadAttemptResult(db, ns, fence.attemptId)).kind).toBe('corrupt')
  })

  test('an inline output is re-verified against its digest when it is read', async ({ db }) => {
    const ns = 'ns-inline'
    const fence = await running(db, ns)
    await commitTerminal(db, { ...fence, result: completed('short') }, policy())
    expect(await loadAttemptResult(db, ns, fence.attemptId)).toEqual({
      kind: 'complete',
      output: 'short',
      bytes: 5,
      digest: resultDigest('short'),
      artifactId: null,
    })
    await sql`update attempts set output_preview = 'shirt' where id = ${fence.attemptId}`.execute(
      db,
    )
    expect(await loadAttemptResult(db, ns, fence.attemptId)).toEqual({
      kind: 'corrupt',
      artifactId: null,
      bytes: 5,
      digest: resultDigest('short'),
    })
  })

  test("a queued cancel's fingerprint binds the delegation's trace id, as commits and process loss do", async ({
    db,
  }) => {
    const attemptId = randomUUID()
    const [accepted] = await acceptDelegations(db, [
      {
        namespaceId: 'default',
        sessionId: 'cancelled',
        name: 'scripted',
        prompt: 'x',
        metadata: { traceId: 'trace-cancelled' },
        attemptId,
        newAgentId: randomUUID(),
      },
    ])
    if (accepted?.kind !== 'accepted') throw new Error(String(accepted?.kind))
    expect(await requestCancel(db, { attemptId, reason: null })).toEqual({
      kind: 'cancelled_queued',
    })
    const cancelled = { stopReason: 'aborted', output: '', failureCategory: 'cancelled' } as const
    expect(await fingerprintOf(db, attemptId)).toBe(
      buildTerminalProjection(attemptId, 0, cancelled, { traceId: 'trace-cancelled' }).fingerprint,
    )
    expect(await fingerprintOf(db, attemptId)).not.toBe(
      buildTerminalProjection(attemptId, 0, cancelled).fingerprint,
    )
  })
})

/** Bytes of every `Buffer` value in the rows the ledger answered through `db` (a read's cost). */
function countingReads(db: Db): { db: Db; bytes: () => number } {
  let bytes = 0
  const counted = db.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: (args) => {
      for (const row of args.result.rows as Record<string, unknown>[])
        for (const value of Object.values(row)) if (Buffer.isBuffer(value)) bytes += value.length
      return Promise.resolve(args.result)
    },
  })
  return { db: counted, bytes: () => bytes }
}

/** An output of `chunks` and a half chunks whose every byte says where it is. */
function chunkedOutput(chunks: number): string {
  const bytes = Math.floor((chunks + 0.5) * ARTIFACT_CHUNK_BYTES)
  return Array.from({ length: bytes }, (_, i) => String.fromCharCode(97 + ((i >> 10) % 26))).join(
    '',
  )
}

describe('artifact content in chunks, written before the commit', () => {
  test("the commit's statements carry no content: only the chunk writes before it do, one chunk each", async ({
    databaseUrl,
    db,
  }) => {
    const ns = 'ns-chunks-structure'
    const fence = await running(db, ns)
    const statements: { sql: string; parameterBytes: number; buffers: number[] }[] = []
    const watched = createDb({
      connectionString: databaseUrl,
      maxConnections: 2,
      onQuery: (text, parameters) => {
        const buffers = parameters.filter((p) => Buffer.isBuffer(p)).map((b) => b.length)
        const parameterBytes = parameters.reduce<number>(
          (sum, p) => sum + (Buffer.isBuffer(p) ? p.length : String(p).length),
          0,
        )
        statements.push({ sql: text, parameterBytes, buffers })
      },
    })
    try {
      const output = chunkedOutput(3)
      const result = completed(output)
      expect(await commitTerminal(watched, { ...fence, result }, policy())).toBe('committed')
      const chunkWrites = statements.filter((s) => s.sql.includes('insert into artifact_chunks'))
      expect(chunkWrites.map((s) => s.buffers)).toEqual([
        [ARTIFACT_CHUNK_BYTES],
        [ARTIFACT_CHUNK_BYTES],
        [ARTIFACT_CHUNK_BYTES],
        [ARTIFACT_CHUNK_BYTES / 2],
      ])
      const lockAt = statements.findIndex((s) => s.sql.includes('namespace_usage'))
      expect(lockAt).toBeGreaterThan(statements.indexOf(chunkWrites.at(-1) ?? statements[0]!))
      // From the namespace lock to the end of the commit: no content, a few KiB of parameters.
      for (const statement of statements.slice(lockAt)) {
        expect(statement.buffers).toEqual([])
        expect(statement.parameterBytes).toBeLessThan(16 * 1024)
      }
      const load = await loadAttemptResult(db, ns, fence.attemptId)
      expect(load).toMatchObject({ kind: 'complete', bytes: output.length })
      expect(load.kind === 'complete' && load.output === output).toBe(true)
    } finally {
      await watched.destroy()
    }
  })

  test('a commit refused over quota, a replay and a stale owner leave no uploaded bytes; usage counts the artifact once', async ({
    db,
  }) => {
    const ns = 'ns-chunks-refused'
    const fence = await running(db, ns)
    const big = completed('q'.repeat(2 * ARTIFACT_CHUNK_BYTES))
    expect(
      await commitTerminal(db, { ...fence, result: big }, policy({ namespaceMaxBytes: 100 })),
    ).toBe('committed')
    expect((await getAttempt(db, fence.attemptId))?.failureCategory).toBe('quota_exceeded')
    expect(await uploadedBytes(db, fence.attemptId)).toBe(0)
    expect(await usage(db, ns)).toBe(0)

    const other = await running(db, ns)
    const fits = completed('f'.repeat(ARTIFACT_CHUNK_BYTES + 10))
    expect(await commitTerminal(db, { ...other, result: fits }, policy())).toBe('committed')
    expect(await commitTerminal(db, { ...other, result: fits }, policy())).toBe('replayed')
    expect(
      await commitTerminal(db, { ...other, ownerGeneration: 99, result: fits }, policy()),
    ).toBe('refused')
    expect(await usage(db, ns)).toBe(ARTIFACT_CHUNK_BYTES + 10)
    expect(await uploadRows(db, other.attemptId)).toBe(0)
    expect(await chunkBytesOf(db, other.attemptId)).toBe(ARTIFACT_CHUNK_BYTES + 10)
  })

  test('an upload no commit bound is collected by expiry after the grace period, with its chunks', async ({
    db,
  }) => {
    const fence = await running(db, 'ns-chunks-orphan')
    const content = Buffer.from('o'.repeat(ARTIFACT_CHUNK_BYTES + 1))
    const staged = await stageArtifact(db, {
      attemptId: fence.attemptId,
      content,
      digest: resultDigest(content),
    })
    if (staged === undefined) throw new Error('the running attempt exists')
    expect((await expireArtifacts(db, { limit: 10 })).discarded).toBe(0)
    await sql`
      update artifact_uploads set created_at = now() - interval '1 day' where id = ${staged.uploadId}
    `.execute(db)
    expect((await expireArtifacts(db, { limit: 10 })).discarded).toBe(1)
    const left = await sql<{ n: number }>`
      select count(*)::int as n from artifact_chunks where upload_id = ${staged.uploadId}
    `.execute(db)
    expect(left.rows[0]?.n).toBe(0)
  })

  test('expiry deletes the chunks: no byte of the content is left in the ledger', async ({
    db,
  }) => {
    const ns = 'ns-chunks-expiry'
    await drainExpiry(db)
    const fence = await running(db, ns)
    const output = `expiring ${randomUUID()} `.repeat(100)
    await commitTerminal(db, { ...fence, result: completed(output) }, policy({ retentionMs: 0 }))
    expect(await ledgerCopiesOf(db, Buffer.from(output))).toEqual(['artifact_chunks.content'])
    expect((await expireArtifacts(db, { limit: 10 })).expired).toBe(1)
    expect(await ledgerCopiesOf(db, Buffer.from(output))).toEqual([])
  })
})

describe('range reads', () => {
  test('a one-byte range of a large artifact reads one chunk and verifies it; a complete read reads them all', async ({
    db,
  }) => {
    const ns = 'ns-range'
    const fence = await running(db, ns)
    const output = chunkedOutput(6)
    await commitTerminal(db, { ...fence, result: completed(output) }, policy())
    const artifactId = (await getAttempt(db, fence.attemptId))?.artifact?.artifactId ?? ''
    const at = 4 * ARTIFACT_CHUNK_BYTES + 12345

    const ranged = countingReads(db)
    const one = await loadArtifact(ranged.db, ns, artifactId, () => ({ start: at, end: at }))
    expect(one).toMatchObject({ kind: 'content', range: { start: at, end: at } })
    expect(one.kind === 'content' && one.content.toString()).toBe(output[at])
    expect(ranged.bytes()).toBe(ARTIFACT_CHUNK_BYTES)

    // Across a chunk boundary: the two chunks covering it.
    const across = countingReads(db)
    const start = 2 * ARTIFACT_CHUNK_BYTES - 3
    const two = await loadArtifact(across.db, ns, artifactId, () => ({ start, end: start + 5 }))
    expect(two.kind === 'content' && two.content.toString()).toBe(output.slice(start, start + 6))
    expect(across.bytes()).toBe(2 * ARTIFACT_CHUNK_BYTES)

    const whole = countingReads(db)
    const all = await loadArtifact(whole.db, ns, artifactId)
    expect(all.kind === 'content' && all.content.toString() === output).toBe(true)
    expect(whole.bytes()).toBe(output.length)

    // A damaged chunk fails the reads that cover it, and only those.
    await sql`
      update artifact_chunks set content = ${Buffer.alloc(ARTIFACT_CHUNK_BYTES, 'x')}
      where upload_id = (select upload_id from artifacts where id = ${artifactId}) and seq = 1
    `.execute(db)
    expect((await loadArtifact(db, ns, artifactId)).kind).toBe('corrupt')
    expect((await loadArtifact(db, ns, artifactId, () => ({ start, end: start + 5 }))).kind).toBe(
      'corrupt',
    )
    expect((await loadArtifact(db, ns, artifactId, () => ({ start: at, end: at }))).kind).toBe(
      'content',
    )
    expect((await loadArtifact(db, ns, artifactId, () => 'unsatisfiable')).kind).toBe(
      'unsatisfiable',
    )
  })
})

async function uploadRows(db: Db, attemptId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    select count(*)::int as n from artifact_uploads where attempt_id = ${attemptId}
  `.execute(db)
  return r.rows[0]?.n ?? 0
}

/** Bytes in chunks of uploads of the attempt, bound or not. */
async function uploadedBytes(db: Db, attemptId: string): Promise<number> {
  const r = await sql<{ n: string }>`
    select coalesce(sum(octet_length(c.content)), 0) as n from artifact_chunks c
    where c.upload_id in (select id from artifact_uploads where attempt_id = ${attemptId}
                          union select upload_id from artifacts where attempt_id = ${attemptId})
  `.execute(db)
  return Number(r.rows[0]?.n ?? 0)
}

/** Bytes in the chunks of the attempt's artifact. */
async function chunkBytesOf(db: Db, attemptId: string): Promise<number> {
  const r = await sql<{ n: string }>`
    select coalesce(sum(octet_length(c.content)), 0) as n from artifact_chunks c
    join artifacts ar on ar.upload_id = c.upload_id where ar.attempt_id = ${attemptId}
  `.execute(db)
  return Number(r.rows[0]?.n ?? 0)
}
