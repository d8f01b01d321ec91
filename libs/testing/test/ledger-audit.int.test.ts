import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  acceptDelegations,
  claimAttempt,
  commitTerminal,
  createHostedRun,
  createHostedSession,
  createRun,
  endRun,
  startNextRun,
  type Db,
} from '@baton/store'
import { describe, expect, test } from '../src/fixtures.ts'
import {
  auditArtifacts,
  auditContinuations,
  auditExecutionWitness,
  auditHostedSessions,
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
    values (${attemptId},
            coalesce((select session_id from attempts where id = ${attemptId}), 'forged'),
            'running', ${toStatus}, ${event}, 'forger', 1)
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

/** A user message and the parent's answer, as a hosted run's turn appends them from `base`. */
function turn(base: number, input: string, answer: string): unknown[] {
  return [
    {
      type: 'message',
      seq: base,
      message: { role: 'user', content: [{ type: 'text', text: input }] },
    },
    { type: 'message', seq: base + 1, message: { role: 'assistant', content: answer } },
  ]
}

/** Starts the session's next run and commits it as a recalling parent answers. */
async function runHostedTurn(
  db: Db,
  sessionId: string,
  input: (runId: string) => Promise<string>,
  base: number,
  seen: readonly string[],
  during?: (runId: string) => Promise<void>,
): Promise<string> {
  const runId = await startNextRun(db, { namespaceId: 'default', sessionId })
  if (runId === undefined) throw new Error('no run started')
  const claim = await claimAttempt(db, { attemptId: runId, ownerId: 'w1', leaseTtlMs: 10_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  await during?.(runId)
  const text = await input(runId)
  const output = [...seen, text].join('\n')
  const result = {
    stopReason: 'completed',
    output,
    failureCategory: null,
    history: { baseSeq: base, events: turn(base, text, output) },
  }
  const fence = { attemptId: runId, ownerId: 'w1', ownerGeneration: claim.attempt.ownerGeneration }
  expect(await commitTerminal(db, { ...fence, result })).toBe('committed')
  return output
}

describe('hosted sessions', () => {
  test('one run at a time, one continuation run per late result, an intact conversation; an overlapping run, a duplicated continuation and a broken conversation are flagged', async ({
    db,
  }) => {
    const sessionId = `audit-hosted-${randomUUID()}`
    const ns = 'default'
    const parentAgentId = randomUUID()
    expect(
      await createHostedSession(db, {
        namespaceId: ns,
        sessionId,
        parentAgentId,
        profile: 'recaller',
      }),
    ).not.toBe('exists')
    await createHostedRun(db, { namespaceId: ns, sessionId, runId: randomUUID(), input: 'go' })
    // The first run delegates one child, which ends after the run: a late result.
    let child = ''
    const first = await runHostedTurn(
      db,
      sessionId,
      async () => 'go',
      0,
      [],
      async (runId) => {
        child = randomUUID()
        const [outcome] = await acceptDelegations(db, [
          {
            namespaceId: ns,
            sessionId,
            name: 'audit-hosted-child',
            prompt: 'x',
            metadata: {},
            attemptId: child,
            newAgentId: randomUUID(),
            parentRunId: runId,
          },
        ])
        expect(outcome?.kind).toBe('accepted')
      },
    )
    await runToCompletion(db, child, 'answer')
    const continuationInput = async (runId: string) => {
      const r = await sql<{ input: string }>`
        select input from continuations where consumer_run_id = ${runId}::uuid
      `.execute(db)
      return r.rows[0]?.input ?? 'none'
    }
    await runHostedTurn(db, sessionId, continuationInput, 2, [first])

    const audit = () =>
      auditHostedSessions(db, { sessionIds: [sessionId], recalling: ['recaller'] })
    expect(await audit()).toMatchObject({
      sessions: 1,
      runs: 2,
      continuationRuns: 1,
      results: 1,
      lateResults: 1,
      conversationEvents: 4,
      bad: 0,
    })

    const event = (kind: string, payload: unknown) =>
      sql`
      select baton_session_event(${ns}, ${sessionId}, ${kind}, gen_random_uuid(), null,
                                 ${JSON.stringify(payload)}::jsonb)
    `.execute(db)
    // A second start while a run is active.
    await event('run_started', {})
    await event('run_started', {})
    let found = await audit()
    expect(found.violations.get('overlapping_runs')).toBe(1)
    expect(found.bad).toBe(1)
    // The late result queued a second time.
    await event('run_queued', { causeAttemptId: child })
    found = await audit()
    expect(found.violations.get('continuation_duplicate')).toBe(1)
    expect(found.bad).toBe(2)
    // The first turn's user message rewritten: the stream and the second run's answer disagree
    // with the conversation.
    await sql`
      update agent_context_events set event = jsonb_set(event, '{message,content,0,text}', '"og"')
      where agent_id = ${parentAgentId}::uuid and seq = 0
    `.execute(db)
    found = await audit()
    expect(found.violations.get('conversation_stream')).toBe(1)
    expect(found.violations.get('conversation_recall')).toBe(2)
    // The first turn's answer lost: a gap, and the second turn no longer follows the first.
    await sql`
      delete from agent_context_events where agent_id = ${parentAgentId}::uuid and seq = 1
    `.execute(db)
    found = await audit()
    expect(found.violations.get('conversation_gap')).toBe(1)
    expect(found.violations.get('conversation_order')).toBe(1)
    expect(found.samples.join('\n')).toContain(sessionId)
  })
})
