import { randomUUID } from 'node:crypto'
import { describe, expect, tenantKey } from '@baton/testing'
import { apiTest } from './support/api-harness.ts'

describe('rate limits', () => {
  apiTest(
    'a key over its limit gets 429 with Retry-After in Baton shape; other keys and the probes are unaffected',
    async ({ inProcessApi, db }) => {
      const h = await inProcessApi({ RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_MS: '60000' })
      const other = { authorization: `Bearer ${await tenantKey(db, 'other')}` }
      const path = `/v1/attempts/${randomUUID()}`
      for (let i = 0; i < 5; i += 1) expect((await h.get(path)).status).toBe(404)
      const limited = await fetch(`${h.base}${path}`, { headers: h.auth })
      expect(limited.status).toBe(429)
      const retryAfter = Number(limited.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(await limited.json()).toMatchObject({
        error: { code: 'RATE_LIMITED', details: { retryAfterSeconds: retryAfter } },
      })
      // A delegation over the limit is refused before anything is written.
      const before = await db
        .selectFrom('attempts')
        .select(db.fn.countAll().as('n'))
        .executeTakeFirst()
      expect(
        (await h.post('/v1/sessions/s-limited/delegations', { name: 'scripted', prompt: 'x' }))
          .status,
      ).toBe(429)
      expect(
        await db.selectFrom('attempts').select(db.fn.countAll().as('n')).executeTakeFirst(),
      ).toEqual(before)
      // Another key has its own budget; the probes have none.
      expect((await h.get(path, other)).status).toBe(404)
      for (let i = 0; i < 10; i += 1) expect((await h.get('/healthz')).status).toBe(200)
    },
  )
})
