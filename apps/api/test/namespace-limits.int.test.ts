// A namespace's limits live in the ledger: set through the admin API, enforced by every worker's
// next artifact commit whatever that worker's environment says.
import { sql } from 'kysely'
import { createBatonClient, type BatonClient } from '@baton/client'
import {
  LEDGER_RETENTION_MS_DEFAULT,
  LEDGER_RETENTION_MS_MAX,
  type TerminalAttemptView,
} from '@baton/contracts'
import { describe, eventually, expect, tenantKey, test } from '@baton/testing'

const ADMIN_KEY = 'limits-test-admin-key-0123456789abcdefghij'
/** Environments that disagree: one worker would take anything, the other nothing. */
const GENEROUS = {
  WORKER_ID: 'generous',
  ARTIFACT_MAX_BYTES: '100000000',
  NAMESPACE_ARTIFACT_MAX_BYTES: '100000000',
}
const STINGY = { WORKER_ID: 'stingy', ARTIFACT_MAX_BYTES: '10', NAMESPACE_ARTIFACT_MAX_BYTES: '10' }

describe('namespace limits in the ledger', () => {
  test('limits set through the admin API are enforced by two workers whose environments disagree; cleared, each worker falls back to its own default', async ({
    baton,
    db,
  }) => {
    const h = await baton({
      workers: 0,
      apiEnv: { ADMIN_API_KEY: ADMIN_KEY },
      env: { INLINE_OUTPUT_BYTES: '64' },
    })
    const admin = createBatonClient({ baseUrl: h.base, apiKey: ADMIN_KEY }).admin
    let n = 0
    /** The terminal view of an output of `bytes` bytes, and the worker that committed it. */
    const outcomeOf = async (bytes: number) => {
      n += 1
      const view = (await h.client.delegateAndWait(
        {
          sessionId: `limits-${n}`,
          name: 'scripted',
          prompt: JSON.stringify({ output: 'abc', outputBytes: bytes }),
        },
        60_000,
      )) as TerminalAttemptView
      const owner = await sql<{ owner_id: string }>`
        select owner_id from attempts where id = ${view.attemptId}
      `.execute(db)
      const kept = view.artifact === null ? view.failureCategory : 'stored'
      return `${owner.rows[0]?.owner_id ?? '?'}: ${kept ?? 'inline'}`
    }

    expect(await admin.getNamespaceLimits('default')).toEqual({
      namespaceId: 'default',
      limits: {
        artifactQuotaBytes: null,
        artifactMaxBytes: null,
        agentHistoryMaxBytes: null,
        ledgerRetentionMs: null,
      },
      defaults: {
        artifactQuotaBytes: 1024 * 1024 * 1024,
        artifactMaxBytes: 64 * 1024 * 1024,
        agentHistoryMaxBytes: 64 * 1024 * 1024,
        ledgerRetentionMs: LEDGER_RETENTION_MS_DEFAULT,
      },
    })
    await h.startWorker(GENEROUS)
    expect(
      await admin.setNamespaceLimits('default', {
        artifactMaxBytes: 1000,
        artifactQuotaBytes: 1000,
      }),
    ).toMatchObject({ limits: { artifactMaxBytes: 1000, artifactQuotaBytes: 1000 } })
    expect(await outcomeOf(2000)).toBe('generous: quota_exceeded')
    expect(await outcomeOf(600)).toBe('generous: stored')
    expect(await outcomeOf(600)).toBe('generous: quota_exceeded')

    // The stingy worker takes over; the limits change while it runs.
    const stingy = await h.startWorker(STINGY)
    await h.killWorker(
      h.workers.find((w) => w !== stingy),
      'SIGTERM',
    )
    await admin.setNamespaceLimits('default', { artifactMaxBytes: 1000, artifactQuotaBytes: 5000 })
    expect(await outcomeOf(600)).toBe('stingy: stored')
    expect(await outcomeOf(2000)).toBe('stingy: quota_exceeded')

    // Cleared: the stingy worker's own default applies again.
    expect(await admin.setNamespaceLimits('default', {})).toMatchObject({
      limits: {
        artifactQuotaBytes: null,
        artifactMaxBytes: null,
        agentHistoryMaxBytes: null,
        ledgerRetentionMs: null,
      },
    })
    expect(await outcomeOf(600)).toBe('stingy: quota_exceeded')
  }, 240_000)

  test('limits are refused above what Baton can store, and for a namespace that does not exist, with nothing written', async ({
    baton,
  }) => {
    const h = await baton({ workers: 0, apiEnv: { ADMIN_API_KEY: ADMIN_KEY } })
    const admin = createBatonClient({ baseUrl: h.base, apiKey: ADMIN_KEY }).admin
    await expect(
      admin.setNamespaceLimits('default', { artifactMaxBytes: 2 ** 29 }),
    ).rejects.toMatchObject({ status: 400, code: 'VALIDATION_FAILED' })
    await expect(
      admin.setNamespaceLimits('default', { artifactQuotaBytes: -1 }),
    ).rejects.toMatchObject({ status: 400, code: 'VALIDATION_FAILED' })
    await expect(admin.getNamespaceLimits('nobody-here')).rejects.toMatchObject({
      status: 404,
      code: 'NAMESPACE_NOT_FOUND',
    })
    await expect(
      admin.setNamespaceLimits('nobody-here', { artifactMaxBytes: 5 }),
    ).rejects.toMatchObject({ status: 404, code: 'NAMESPACE_NOT_FOUND' })
    expect((await admin.getNamespaceLimits('default')).limits).toEqual({
      artifactQuotaBytes: null,
      artifactMaxBytes: null,
      agentHistoryMaxBytes: null,
      ledgerRetentionMs: null,
    })
  }, 120_000)

  test('a ledger retention outside one minute to ten years, or not a whole number of milliseconds, is a 400 and leaves the stored limits as they were', async ({
    baton,
  }) => {
    const h = await baton({ workers: 0, apiEnv: { ADMIN_API_KEY: ADMIN_KEY } })
    const admin = createBatonClient({ baseUrl: h.base, apiKey: ADMIN_KEY }).admin
    const stored = { artifactMaxBytes: 5000, ledgerRetentionMs: 7_200_000 }
    expect((await admin.setNamespaceLimits('default', stored)).limits).toMatchObject(stored)
    for (const ledgerRetentionMs of [0, -1, 59_999, 1.5, LEDGER_RETENTION_MS_MAX + 1, '1h']) {
      const refused = await fetch(`${h.base}/v1/admin/namespaces/default/limits`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ artifactMaxBytes: 1, ledgerRetentionMs }),
      })
      expect(
        { status: refused.status, body: await refused.json() },
        String(ledgerRetentionMs),
      ).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })
    }
    expect((await admin.getNamespaceLimits('default')).limits).toMatchObject(stored)
    expect(
      (await admin.setNamespaceLimits('default', { ledgerRetentionMs: LEDGER_RETENTION_MS_MAX }))
        .limits,
    ).toMatchObject({ artifactMaxBytes: null, ledgerRetentionMs: LEDGER_RETENTION_MS_MAX })
  }, 120_000)

  test("a ledger retention set through the admin API makes the reconciler remove that namespace's expired history, and no other namespace's", async ({
    baton,
    db,
  }) => {
    // The workers keep the default retention (30 days); their reconciler passes run often.
    const h = await baton({
      apiEnv: { ADMIN_API_KEY: ADMIN_KEY },
      workerEnv: { RECONCILE_INTERVAL_MS: '200' },
    })
    const admin = createBatonClient({ baseUrl: h.base, apiKey: ADMIN_KEY }).admin
    const other = createBatonClient({ baseUrl: h.base, apiKey: await tenantKey(db, 'kept-longer') })
    const finished = async (client: BatonClient, sessionId: string) => {
      const view = await client.delegateAndWait(
        { sessionId, name: 'scripted', prompt: 'x' },
        30_000,
      )
      expect(view.status).toBe('terminal')
      return view
    }
    const expiring = await finished(h.client, 'retained-briefly')
    const kept = await finished(other, 'retained-long')
    // Both ended two hours ago: past an hour's retention, well within the default.
    await sql`
      update attempts set terminal_at = terminal_at - interval '2 hours'
      where id in (${expiring.attemptId}::uuid, ${kept.attemptId}::uuid)
    `.execute(db)

    expect(
      (await admin.setNamespaceLimits('default', { ledgerRetentionMs: 3_600_000 })).limits,
    ).toMatchObject({ ledgerRetentionMs: 3_600_000 })
    const left = (attemptId: string) =>
      sql<{ attempts: number; agents: number; transitions: number }>`
        select (select count(*)::int from attempts where id = ${attemptId}::uuid) as attempts,
               (select count(*)::int from agents where id = ${attemptId === expiring.attemptId ? expiring.agentId : kept.agentId}::uuid) as agents,
               (select count(*)::int from attempt_transitions where attempt_id = ${attemptId}::uuid)
                 as transitions
      `
        .execute(db)
        .then((r) => r.rows[0])
    await eventually(
      async () => ((await left(expiring.attemptId))?.attempts === 0 ? true : undefined),
      { timeoutMs: 30_000, what: "the reconciler's removal of the expired attempt" },
    )
    expect(await left(expiring.attemptId)).toEqual({ attempts: 0, agents: 0, transitions: 0 })
    // The same batch statement read every namespace: the other one's attempt is older than the
    // namespace above allows, but within its own (default) retention.
    expect(await left(kept.attemptId)).toEqual({ attempts: 1, agents: 1, transitions: 3 })
    expect(await other.getAttempt(kept.attemptId)).toMatchObject({ status: 'terminal' })
  }, 120_000)
})
