import { randomUUID } from 'node:crypto'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { describe, expect, test } from '@baton/testing'
import type { DB } from '../../src/schema.ts'
import { acceptDelegations } from '../../src/attempts/accept-delegations.ts'
import { claimAttempts } from '../../src/attempts/claim-attempt.ts'
import { commitTerminals } from '../../src/attempts/commit-terminal.ts'
import { renewLeases } from '../../src/attempts/renew-leases.ts'

const HELD = 3000

describe('batched liveness', () => {
  test(`with ${HELD} leases held, a claim, a heartbeat and a commit are one statement each`, async ({
    databaseUrl,
  }) => {
    let statements = 0
    const db = new Kysely<DB>({
      dialect: new PostgresDialect({
        pool: new pg.Pool({ connectionString: databaseUrl, max: 4 }),
      }),
      log: (event) => {
        if (event.level === 'query') statements += 1
      },
    })
    try {
      const inputs = Array.from({ length: HELD }, () => ({
        namespaceId: 'default',
        sessionId: 'liveness',
        name: 'scripted',
        prompt: [{ type: 'text', text: 'x' }],
        metadata: {},
        attemptId: randomUUID(),
        newAgentId: randomUUID(),
      }))
      statements = 0
      await acceptDelegations(db, inputs)
      expect(statements).toBe(1)

      statements = 0
      const claims = await claimAttempts(db, {
        ownerId: 'w1',
        leaseTtlMs: 60_000,
        attemptIds: inputs.map((i) => i.attemptId),
      })
      expect(statements).toBe(1)
      expect(claims.every((c) => c.kind === 'claimed')).toBe(true)

      statements = 0
      const renewals = await renewLeases(db, {
        ownerId: 'w1',
        leases: inputs.map((i) => ({ attemptId: i.attemptId, ownerGeneration: 1 })),
        leaseTtlMs: 60_000,
      })
      expect(statements).toBe(1)
      expect(renewals.filter((r) => r.status === 'renewed')).toHaveLength(HELD)

      statements = 0
      const outcomes = await commitTerminals(
        db,
        inputs.map((i) => ({
          attemptId: i.attemptId,
          ownerId: 'w1',
          ownerGeneration: 1,
          result: { stopReason: 'completed', output: 'done', failureCategory: null },
        })),
      )
      expect(statements).toBe(1)
      expect(outcomes.every((o) => o === 'committed')).toBe(true)
    } finally {
      await db.destroy()
    }
  })
})
