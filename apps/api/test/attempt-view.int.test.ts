import { randomUUID } from 'node:crypto'
import { createDb, getAttempt, toAttemptView } from '@baton/store'
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
})
