import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  acceptDelegations,
  claimAttempt,
  commitTerminal,
  createRun,
  endRun,
  type Db,
} from '@baton/store'
import { describe, expect, test } from '../src/fixtures.ts'
import {
  auditArtifacts,
  auditContinuations,
  auditExecutionWitness,
  auditLedger,
  describeAttempts,
} from '../src/ledger-audit.ts'

async function accept(db: Db, name: string, prompt: string): Promise<string> {
  const attemptId = randomUUID()
  const [outcome] = await acceptDelegations(db, [
    {
      namespaceId: 'default',
      sessionId: `audit-${name}`,
      name,
      prompt,
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    },
  ])
  if (outcome?.kind !== 'accepted') throw new Error(String(outcome?.kind))
  return attemptId
}

async function runToCompletion(db: Db, attemptId: string, output = 'done'): Promise<void> {
  const claim = await claimAttempt(db, { attemptId, ownerId: 'w1', leaseTtlMs: 10_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  const result = { stopReason: 'completed', output, failureCategory: null }
  const fence = { attemptId, ownerId: 'w1', ownerGeneration: claim.attempt.ownerGeneration }
  expect(await commitTerminal(db, { ...fence, result })).toBe('committed')
}

/** A transition the store never writes twice, written again behind its back. */
async function forgeTransition(db: Db, attemptId: string, event: string, toStatus: string) {
  await sql`
    insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event, owner_id,
                                     owner_generation)
    select id, session_id, 'running', ${toStatus}, ${event}, 'forger', 1
    from attempts where id = ${attemptId}
  `.execute(db)
}

// Each test uses its own subagent name; the ledger-wide counts are read as differences.
describe('ledger invariants', () => {
  test('a finished attempt breaks nothing; an accepted one that never finished is lost and stuck', async ({
    db,
  }) => {
    const before = await auditLedger(db, [])
    const done = await accept(db, 'audit-clean', 'x')
    await runToCompletion(db, done)
    const open = await accept(db, 'audit-clean', 'y')
    const audit = await auditLedger(db, [done, open])
    expect(audit).toMatchObject({
      lost: 1,
      stuck: before.stuck + 1,
      duplicate_terminal: before.duplicate_terminal,
      duplicate_execution: before.duplicate_execution,
    })
    expect(audit.samples.join('\n')).toContain(open)
    expect((await auditLedger(db, [randomUUID()])).lost).toBe(1)
  })

  test('a second claim and a second terminal transition are reported, one duplicate attempt each', async ({
    db,
  }) => {
    const before = await auditLedger(db, [])
    const twiceClaimed = await accept(db, 'audit-dup', 'x')
    await runToCompletion(db, twiceClaimed)
    await forgeTransition(db, twiceClaimed, 'claimed', 'running')
    const twiceEnded = await accept(db, 'audit-dup', 'y')
    await runToCompletion(db, twiceEnded)
    await forgeTransition(db, twiceEnded, 'committed', 'terminal')
    const audit = await auditLedger(db, [twiceClaimed, twiceEnded])
    expect(audit).toMatchObject({
      lost: 0,
      duplicate_execution: before.duplicate_execution + 1,
      duplicate_terminal: before.duplicate_terminal + 1,
      duplicates: before.duplicates + 2,
    })
  })

  test('an audit row naming an attempt the ledger does not hold is reported', async ({ db }) => {
    const before = await auditLedger(db, [])
    const done = await accept(db, 'audit-orphan', 'x')
    await runToCompletion(db, done)
    expect((await auditLedger(db, [done])).orphan_transitions).toBe(before.orphan_transitions)
    const missing = randomUUID()
    await forgeTransition(db, missing, 'claimed', 'running')
    const audit = await auditLedger(db, [done])
    expect(audit.orphan_transitions).toBe(before.orphan_transitions + 1)
    expect(await describeAttempts(db, [missing])).toEqual([
      expect.stringMatching(new RegExp(`^${missing} missing gen -: claimed@1 `)),
    ])
  })
})

describe('execution witness', () => {
  test('a start per claimed attempt and one for each completed attempt pass', async ({ db }) => {
    const completed = await accept(db, 'witnessed-ok', 'token-1')
    await runToCompletion(db, completed)
    const claimedOnly = await accept(db, 'witnessed-ok', 'token-2')
    await claimAttempt(db, { attemptId: claimedOnly, ownerId: 'w1', leaseTtlMs: 10_000 })
    // A claimed attempt may have started or not (a fault can land between claim and start).
    await accept(db, 'witnessed-ok', 'token-3')
    const audit = await auditExecutionWitness(db, 'witnessed-ok', new Map([['token-1', 1]]))
    expect(audit).toMatchObject({ attempts: 3, starts: 1, bad: 0 })
  })

  test('a second start, a start nobody claimed and a completion nobody started are each reported', async ({
    db,
  }) => {
    const twice = await accept(db, 'witnessed-bad', 'token-twice')
    await runToCompletion(db, twice)
    await accept(db, 'witnessed-bad', 'token-unclaimed')
    const unseen = await accept(db, 'witnessed-bad', 'token-unseen')
    await runToCompletion(db, unseen)
    const audit = await auditExecutionWitness(
      db,
      'witnessed-bad',
      new Map([
        ['token-twice', 2],
        ['token-unclaimed', 1],
        ['token-nobody', 1],
      ]),
    )
    expect(Object.fromEntries(audit.violations)).toEqual({
      duplicate_start: 1,
      start_without_claim: 2,
      missing_start: 1,
    })
    expect(audit.bad).toBe(4)
  })

  test("every artifact's content is checked against its digest, its binding and its namespace's usage", async ({
    db,
  }) => {
    const attemptId = await accept(db, 'audit-artifacts', 'z')
    await runToCompletion(db, attemptId, 'a large output '.repeat(1000))
    expect(await auditArtifacts(db)).toMatchObject({ artifacts: 1, verified: 1, bad: 0 })
    await sql`update artifact_chunks set content = ${Buffer.from('forged')}`.execute(db)
    expect((await auditArtifacts(db)).violations.get('content_digest')).toBe(1)
    await sql`update namespace_usage set artifact_bytes = artifact_bytes + 1`.execute(db)
    await sql`update attempts set output_bytes = 1 where id = ${attemptId}`.execute(db)
    const audit = await auditArtifacts(db)
    expect(audit.violations.get('usage')).toBe(1)
    expect(audit.violations.get('binding')).toBe(1)
    expect(audit.bad).toBe(3)
  })

  test('chunks left behind an expired artifact, and chunks of nothing, are violations', async ({
    db,
  }) => {
    const attemptId = await accept(db, 'audit-chunks', 'z')
    await runToCompletion(db, attemptId, 'a large output '.repeat(1000))
    const clean = await auditArtifacts(db)
    expect(clean.violations.get('expired_bytes')).toBe(0)
    await sql`update artifacts set expired_at = now() where attempt_id = ${attemptId}`.execute(db)
    expect((await auditArtifacts(db)).violations.get('expired_bytes')).toBe(1)
    await sql`
      insert into artifact_chunks (upload_id, session_id, seq, content, digest)
      values (gen_random_uuid(), 's', 0, '\\x00'::bytea, 'd')
    `.execute(db)
    expect((await auditArtifacts(db)).violations.get('stray_chunks')).toBe(1)
  })
})

describe('continuation audit', () => {
  /** A session whose run delegated one result that has landed (held for the still-active run). */
  async function heldResult(db: Db, sessionId: string, output = 'done') {
    const runId = randomUUID()
    const created = await createRun(db, {
      namespaceId: 'default',
      sessionId,
      runId,
      consume: [],
      leaseMs: 60_000,
    })
    if (created.kind !== 'created') throw new Error(created.kind)
    const attemptId = randomUUID()
    const [accepted] = await acceptDelegations(db, [
      {
        namespaceId: 'default',
        sessionId,
        name: 'audit-continuations',
        prompt: 'x',
        metadata: {},
        attemptId,
        newAgentId: randomUUID(),
        parentRunId: runId,
      },
    ])
    if (accepted?.kind !== 'accepted') throw new Error(String(accepted?.kind))
    await runToCompletion(db, attemptId, output)
    return { runId, attemptId }
  }

  test('a result consumed by its run and again by a completed continuation run is a duplicate', async ({
    db,
  }) => {
    const sessionId = 'audit-duplicate'
    const { runId, attemptId } = await heldResult(db, sessionId)
    await endRun(db, { namespaceId: 'default', runId, status: 'completed', consumed: [attemptId] })
    expect(await auditContinuations(db, [sessionId])).toMatchObject({
      admitted: 1,
      delivered: 1,
      duplicate: 0,
      missing: 0,
      unreceipted: 0,
    })
    // A second delivery of the same result, written behind the ledger's back: a continuation run
    // that carried it to a consumer that completed. No constraint forbids it; the audit sees it.
    await sql`
      insert into runs (id, namespace_id, session_id, trigger_type, status, cause_attempt_id,
                        settled_at)
      values (${randomUUID()}, 'default', ${sessionId}, 'async_subagent_result', 'completed',
              ${attemptId}, now())
    `.execute(db)
    const audit = await auditContinuations(db, [sessionId])
    expect(audit).toMatchObject({ duplicate: 1, samples: [attemptId] })
  })

  test('a delivery whose receipt does not bind its input is unreceipted; a copy of expired content is expired bytes', async ({
    db,
  }) => {
    const sessionId = 'audit-evidence'
    const { runId, attemptId } = await heldResult(db, sessionId, 'a large output '.repeat(1000))
    await endRun(db, { namespaceId: 'default', runId, status: 'completed', consumed: [attemptId] })
    const clean = { duplicate: 0, missing: 0, expiredBytes: 0, unreceipted: 0 }
    expect(await auditContinuations(db, [sessionId])).toMatchObject(clean)
    await sql`
      update continuations set input = replace(input, '"kind":"artifact"', '"kind":"artifact" ')
      where attempt_id = ${attemptId}
    `.execute(db)
    expect(await auditContinuations(db, [sessionId])).toMatchObject({ unreceipted: 1 })
    // The artifact marked expired while its chunks stay: bytes outlived it.
    await sql`
      update artifacts set expired_at = now() where attempt_id = ${attemptId}
    `.execute(db)
    expect(await auditContinuations(db, [sessionId])).toMatchObject({ expiredBytes: 1 })
    // Its chunks gone, the content copied into the input instead, as admission did before inputs
    // referred to artifacts: the copy outlived it.
    await sql`
      delete from artifact_chunks
      where upload_id = (select upload_id from artifacts where attempt_id = ${attemptId})
    `.execute(db)
    expect(await auditContinuations(db, [sessionId])).toMatchObject({ expiredBytes: 0 })
    await sql`
      update continuations
      set input = replace(input, '"artifactId"', '"base64":"AAAA","artifactId"')
      where attempt_id = ${attemptId}
    `.execute(db)
    expect(await auditContinuations(db, [sessionId])).toMatchObject({ expiredBytes: 1 })
  })
})
