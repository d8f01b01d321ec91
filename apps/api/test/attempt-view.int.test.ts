import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { claimAttempt, commitTerminal, createDb, getAttempt, toAttemptView } from '@baton/store'
import { describe, expect, tenantKey } from '@baton/testing'
import { apiTest, delegate } from './support/api-harness.ts'
import { readAttemptView } from '../src/services/attempt-view.ts'

describe('attempt views', () => {
  apiTest(
    'concurrent reads share one statement, and each answers as its own read would, scoped to its namespace',
    async ({ api: h, databaseUrl, db }) => {
      const other = { authorization: `Bearer ${await tenantKey(db, 'tenant-views')}` }
      const submit = async (headers: Record<string, string>, i: number) => {
        const answer = await h.post(
          delegate(`s-views-${i % 3}`),
          { name: 'scripted', prompt: `{"output":"view ${i}"}` },
          headers,
        )
        expect(answer.status).toBe(202)
        return answer.body.attemptId as string
      }
      const own = await Promise.all(Array.from({ length: 12 }, (_, i) => submit({}, i)))
      const foreign = await Promise.all(Array.from({ length: 4 }, (_, i) => submit(other, i)))
      const missing = randomUUID()

      let statements = 0
      const counted = createDb({
        connectionString: databaseUrl,
        maxConnections: 4,
        onQuery: () => (statements += 1),
      })
      try {
        const ids = [...own, ...foreign, missing, own[0]!]
        const views = await Promise.all(
          ids.map((id) => readAttemptView(counted, id, { namespaceId: 'default' })),
        )
        expect(statements).toBe(1)
        for (const [i, id] of ids.entries()) {
          const alone = await getAttempt(db, id, { namespaceId: 'default' })
          expect(views[i], id).toEqual(alone === undefined ? undefined : toAttemptView(alone))
        }
        expect(views.filter((v) => v !== undefined)).toHaveLength(own.length + 1)
        // Unscoped (workers, tests), the other namespace's attempts are found.
        const unscoped = await Promise.all(foreign.map((id) => readAttemptView(counted, id, {})))
        expect(unscoped.map((v) => v?.attemptId)).toEqual(foreign)
      } finally {
        await counted.destroy()
      }
    },
  )

  apiTest(
    'a terminal output shown whole is verified against its digest: one that no longer matches is never sent',
    async ({ api: h, db }) => {
      const accepted = await h.post(delegate('s-verified'), { name: 'scripted', prompt: 'x' })
      const attemptId = accepted.body.attemptId as string
      const claim = await claimAttempt(db, { attemptId, ownerId: 'w', leaseTtlMs: 60_000 })
      if (claim.kind !== 'claimed') throw new Error(claim.kind)
      const result = { stopReason: 'completed', output: 'the true output', failureCategory: null }
      await commitTerminal(db, {
        attemptId,
        ownerId: 'w',
        ownerGeneration: claim.attempt.ownerGeneration,
        result,
      })
      expect(await h.get(`/v1/attempts/${attemptId}`)).toMatchObject({
        status: 200,
        body: { output: 'the true output', outputTruncated: false },
      })
      await sql`update attempts set output_preview = 'the fake output' where id = ${attemptId}`.execute(
        db,
      )
      for (const path of [`/v1/attempts/${attemptId}`, `/v1/attempts/${attemptId}/wait`]) {
        const answer = await h.get(path)
        expect(answer, path).toMatchObject({
          status: 500,
          body: { error: { code: 'ARTIFACT_INTEGRITY', details: { attemptId } } },
        })
        expect(JSON.stringify(answer.body)).not.toContain('fake')
      }
    },
  )
})
