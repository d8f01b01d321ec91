// Every source of a failure category, read back from the ledger: what a filter on the stored
// `failure_category` finds is the one vocabulary of @baton/contracts, whoever produced it.
import { randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { acceptDelegations, type Db } from '@baton/store'
import { NO_START_CAPABILITIES, type SubagentProvider } from '@baton/subagents'
import { ACP_FIXTURE_AGENT, describe, eventually, expect, test, untilAttempt } from '@baton/testing'
import { enqueue, startRuntime, untilTerminal } from './support/worker-harness.ts'

/** Accepts a delegation to subagent `name`, as the API would. */
async function acceptFor(db: Db, name: string, prompt: string): Promise<string> {
  const attemptId = randomUUID()
  await acceptDelegations(db, [
    {
      namespaceId: 'default',
      sessionId: 'failure-categories',
      name,
      prompt: [{ type: 'text', text: prompt }],
      metadata: {},
      attemptId,
      newAgentId: randomUUID(),
    },
  ])
  return attemptId
}

/** The stored outcome columns, straight from the ledger row. */
async function stored(db: Db, attemptId: string) {
  await untilTerminal(db, attemptId)
  const result = await sql<{ stop_reason: string; failure_category: string | null }>`
    select stop_reason, failure_category from attempts where id = ${attemptId}
  `.execute(db)
  return result.rows[0]
}

/** Attempts whose row carries text a child or provider must not get into the ledger. */
async function leakingRows(db: Db): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int as n from attempts
     where length(failure_category) > 64 or row_to_json(attempts)::text like '%secret-%'
  `.execute(db)
  return result.rows[0]?.n ?? -1
}

/** One markdown subagent per scripted model, and an external ACP agent. */
const SUBAGENTS: Record<string, string> = {
  'refuser.md': `---\nname: refuser\ndescription: declines\nmodel: scripted:refuse\n---\nBe brief.\n`,
  'rambler.md': `---\nname: rambler\ndescription: runs out of tokens\nmodel: scripted:ramble\n---\nBe long.\n`,
  'breaker.md': `---\nname: breaker\ndescription: its model fails\nmodel: scripted:break\n---\nTry.\n`,
  'external.md': `---\nname: external\ndescription: an ACP agent\nprovider: acp\ncommand: ${process.execPath}\nargs: [${ACP_FIXTURE_AGENT}]\n---\n(External.)\n`,
}
const SCRIPTS: Record<string, unknown> = {
  'refuse.json': { steps: [{ kind: 'refusal', text: 'I will not.' }] },
  'ramble.json': { steps: [{ kind: 'max-tokens', text: 'and then, and then' }] },
  'break.json': { steps: [{ kind: 'fail', message: 'upstream exploded: secret-token-789' }] },
}

describe('failure categories stored from a child run', () => {
  test('spawn and ACP subagents store refusal, max_tokens and model_error in one spelling', async ({
    baton,
    db,
    redisUrl,
    queuePrefix,
  }) => {
    const root = await mkdtemp(join(tmpdir(), 'baton-categories-'))
    try {
      const dirs = { subagents: join(root, 'subagents'), scripts: join(root, 'scripts') }
      await mkdir(dirs.subagents)
      await mkdir(dirs.scripts)
      for (const [file, text] of Object.entries(SUBAGENTS))
        await writeFile(join(dirs.subagents, file), text)
      for (const [file, script] of Object.entries(SCRIPTS))
        await writeFile(join(dirs.scripts, file), JSON.stringify(script))
      const fleet = await baton({
        api: false,
        workerEnv: {
          SUBAGENTS_DIR: dirs.subagents,
          SCRIPTED_MODELS_DIR: dirs.scripts,
          WORKSPACE_DIR: root,
        },
      })
      const cases = [
        { name: 'refuser', prompt: 'help', expected: ['refusal', 'refusal'] },
        { name: 'rambler', prompt: 'go on', expected: ['max-tokens', 'max_tokens'] },
        { name: 'breaker', prompt: 'try', expected: ['error', 'model_error'] },
        { name: 'external', prompt: 'stop refusal', expected: ['refusal', 'refusal'] },
        { name: 'external', prompt: 'stop max_tokens', expected: ['max-tokens', 'max_tokens'] },
      ]
      const ids = []
      for (const c of cases) ids.push(await acceptFor(db, c.name, c.prompt))
      await enqueue({ redisUrl, queuePrefix }, ...ids)
      for (const [i, c] of cases.entries()) {
        expect(await stored(db, ids[i] ?? ''), `${c.name}: ${c.prompt}`).toEqual({
          stop_reason: c.expected[0],
          failure_category: c.expected[1],
        })
      }
      // The failing model's message stays inside the child.
      expect(await leakingRows(db)).toBe(0)
      await fleet.close()
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})

/** An over-long category a provider might declare: it must never reach the ledger. */
const LONG_CATEGORY = `secret-${'x'.repeat(100_000)}`

/**
 * A third-party provider: its prompt names what it declares. `hang` waits for the abort and then
 * declares a misleading category, so the stored one shows where it really came from.
 */
function declaringProvider(): SubagentProvider {
  const declared: Record<string, unknown> = {
    known: 'rate_limited',
    unknown: 'tool_timeout',
    oldSpelling: 'refused',
    long: LONG_CATEGORY,
    number: 42,
  }
  return {
    name: 'scripted',
    capabilities: NO_START_CAPABILITIES,
    inheritsParentContext: false,
    start(request) {
      const prompt = request.prompt.map((b) => b.text).join('')
      if (prompt === 'throw') return Promise.reject(new Error('boom at /srv/secret-token-123'))
      const result =
        prompt === 'hang'
          ? new Promise<never>((_, reject) =>
              request.signal.addEventListener('abort', () => reject(new Error('aborted')), {
                once: true,
              }),
            ).catch(() => ({
              output: [],
              stopReason: 'aborted' as const,
              failureCategory: 'refusal',
            }))
          : Promise.resolve({
              output: [],
              stopReason: 'error' as const,
              failureCategory: declared[prompt] as string,
            })
      return Promise.resolve({
        id: randomUUID(),
        localAgent: undefined,
        result,
        dispose: () => result.then(() => undefined),
      })
    },
  }
}

describe('failure categories stored from a provider and from the worker', () => {
  test('a declared category is stored when known, as provider_fault otherwise; a throwing provider and an unknown subagent get theirs', async ({
    db,
    databaseUrl,
    redisUrl,
    queuePrefix,
    track,
  }) => {
    const runtime = await startRuntime(
      { databaseUrl, redisUrl, queuePrefix, track },
      declaringProvider(),
    )
    const cases = [
      { name: 'scripted', prompt: 'known', expected: 'rate_limited' },
      { name: 'scripted', prompt: 'unknown', expected: 'provider_fault' },
      { name: 'scripted', prompt: 'oldSpelling', expected: 'provider_fault' },
      { name: 'scripted', prompt: 'long', expected: 'provider_fault' },
      { name: 'scripted', prompt: 'number', expected: 'provider_fault' },
      { name: 'scripted', prompt: 'throw', expected: 'provider_fault' },
      // Accepted under a catalog that had it; this worker does not run it.
      { name: 'retired', prompt: 'anything', expected: 'unknown_subagent' },
    ]
    const ids = []
    for (const c of cases) ids.push(await acceptFor(db, c.name, c.prompt))
    await enqueue({ redisUrl, queuePrefix }, ...ids)
    for (const [i, c] of cases.entries()) {
      expect(await stored(db, ids[i] ?? ''), c.prompt).toEqual({
        stop_reason: 'error',
        failure_category: c.expected,
      })
    }
    expect(await leakingRows(db)).toBe(0)
    await runtime.shutdownChecked(5_000)
  })

  test('an aborted child stores the category of the reason the worker aborted it with: cancel, shutdown, lease loss', async ({
    services: ctx,
    db,
    redisUrl,
    queuePrefix,
  }) => {
    // Reconciler effectively off: only the lease-loss step below may record process loss.
    const runtime = await startRuntime(ctx, declaringProvider(), {
      RECONCILE_INTERVAL_MS: '600000',
    })
    const cancelled = await acceptFor(db, 'scripted', 'hang')
    const lost = await acceptFor(db, 'scripted', 'hang')
    const shutDown = await acceptFor(db, 'scripted', 'hang')
    await enqueue({ redisUrl, queuePrefix }, cancelled, lost, shutDown)
    for (const id of [cancelled, lost, shutDown]) await untilAttempt(db, id, 'running')

    // A cancel recorded in the ledger: the heartbeat finds it and aborts the child.
    await sql`update attempts set cancel_requested_at = now() where id = ${cancelled}`.execute(db)
    expect(await stored(db, cancelled)).toEqual({
      stop_reason: 'aborted',
      failure_category: 'cancelled',
    })

    // A lease that expired on the database clock: the owner aborts and writes nothing; the
    // reconciler records the same category the abort reason carried.
    await sql`update attempts set lease_expires_at = now() - interval '1 second' where id = ${lost}`.execute(
      db,
    )
    await eventually(async () =>
      (await runtime.reconciler.runOnce()).processLost === 1 ? true : undefined,
    )
    expect(await stored(db, lost)).toEqual({
      stop_reason: 'error',
      failure_category: 'process_lost',
    })

    await runtime.shutdownChecked(5_000)
    expect(await stored(db, shutDown)).toEqual({
      stop_reason: 'aborted',
      failure_category: 'shutdown',
    })
  })
})
