// A namespace's limits live in the ledger: set through the admin API, enforced by every worker's
// next artifact commit whatever that worker's environment says.
import { sql } from 'kysely'
import { createBatonClient } from '@baton/client'
import type { TerminalAttemptView } from '@baton/contracts'
import { describe, expect, test } from '@baton/testing'

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
      limits: { artifactQuotaBytes: null, artifactMaxBytes: null, agentHistoryMaxBytes: null },
      defaults: {
        artifactQuotaBytes: 1024 * 1024 * 1024,
        artifactMaxBytes: 64 * 1024 * 1024,
        agentHistoryMaxBytes: 64 * 1024 * 1024,
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
      limits: { artifactQuotaBytes: null, artifactMaxBytes: null, agentHistoryMaxBytes: null },
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
    })
  }, 120_000)
})
