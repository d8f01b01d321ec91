import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import { createLogger } from '@baton/observability'
import { createAttemptQueues } from '@baton/queue'
import { describe, expect, test } from '@baton/testing'
import { errorHandler } from '../src/http/errors.ts'
import { rowCounts } from './support/api-harness.ts'
import { createAdmission } from '../src/services/admission.ts'

function input(session: string, text: string) {
  return {
    namespaceId: 'default',
    sessionId: session,
    name: 'scripted',
    prompt: [{ type: 'text', text }],
    metadata: {},
    attemptId: randomUUID(),
    newAgentId: randomUUID(),
  }
}

describe('admission batches', () => {
  // Validation keeps such values out; this is the net under it, so it is fed past validation.
  test('a value the ledger refuses fails only its own accept, as a typed 400', async ({
    redisUrl,
    queuePrefix,
    db,
  }) => {
    const queues = createAttemptQueues({
      connection: { url: redisUrl },
      topology: { prefix: queuePrefix, partitions: 1 },
    })
    const admission = createAdmission({
      db,
      queues,
      logger: createLogger({ service: 'test', level: 'silent' }),
      // One statement at a time, so everything submitted together shares a batch.
      maxInFlight: 1,
    })
    const before = await rowCounts(db)
    const valid = Array.from({ length: 40 }, (_, i) =>
      admission.accept(input(`s-batch-${i % 3}`, `task ${i}`)),
    )
    const poisoned = admission.accept(input('s-batch-0', 'bad\u0000'))
    const settled = await Promise.allSettled([...valid, poisoned])
    await queues.close()
    const offender = settled.pop()
    expect(settled.map((s) => s.status)).toEqual(settled.map(() => 'fulfilled'))
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : s.reason))).toEqual(
      settled.map(() => 'accepted'),
    )
    expect(offender?.status).toBe('rejected')
    expect((await rowCounts(db)).attempts - before.attempts).toBe(40)

    // The API answers the offender's error as bad input, in Baton's shape.
    const app = Fastify()
    app.setErrorHandler(errorHandler)
    app.get('/', () => {
      throw (offender as PromiseRejectedResult).reason
    })
    const answer = await app.inject({ method: 'GET', url: '/' })
    expect(answer.statusCode).toBe(400)
    expect(answer.json()).toEqual({
      error: { code: 'VALIDATION_FAILED', message: 'a value in the request cannot be stored' },
    })
    await app.close()
  })
})
