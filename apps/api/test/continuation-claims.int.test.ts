// Bounded claims at scale: a session's claims wait on its own bell, so what becomes claimable in
// one session costs the claims of that session one statement each and no other claim anything.
import { claimAttempt, commitTerminal, type Db } from '@baton/store'
import { describe, eventually, expect } from '@baton/testing'
import { apiTest, type ApiHarness } from './support/api-harness.ts'

const SESSIONS = 200
const CLAIMS_PER_SESSION = 5

/** A claim the API holds open, answered once it takes something or is aborted. */
interface OpenClaim {
  readonly sessionId: string
  readonly answer: Promise<number>
  readonly abort: () => void
}

function openClaim(h: ApiHarness, sessionId: string): OpenClaim {
  const controller = new AbortController()
  const answer = fetch(`${h.base}/v1/sessions/${sessionId}/continuations/claim`, {
    method: 'POST',
    headers: { ...h.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ timeoutMs: 60_000, leaseMs: 60_000 }),
    signal: controller.signal,
  }).then(
    async (r) => {
      await r.arrayBuffer()
      return r.status
    },
    () => 0,
  )
  return { sessionId, answer, abort: () => controller.abort() }
}

/**
 * A result held for the session's active run: delegated over the API, then run to completion by
 * this test acting as the worker (no worker process: nothing else rings the session's bell).
 */
async function heldResult(h: ApiHarness, db: Db, sessionId: string) {
  const run = await h.client.createRun(sessionId)
  const { attemptId } = await h.client.delegate({
    sessionId,
    name: 'scripted',
    prompt: 'held',
    parentRunId: run.runId,
  })
  const claim = await claimAttempt(db, { attemptId, ownerId: 'test-worker', leaseTtlMs: 60_000 })
  if (claim.kind !== 'claimed') throw new Error(claim.kind)
  const committed = await commitTerminal(db, {
    attemptId,
    ownerId: 'test-worker',
    ownerGeneration: claim.attempt.ownerGeneration,
    result: { stopReason: 'completed', output: 'held', failureCategory: null },
  })
  if (committed !== 'committed') throw new Error(committed)
  return run.runId
}

describe('claims at scale', () => {
  apiTest(
    "1,000 waiting claims across 200 sessions: a run's end in one session wakes that session's claims, one statement each, and no other claim",
    async ({ inProcessApi, db }) => {
      const counted = { claims: 0, statements: 0 }
      const h = await inProcessApi(
        {},
        {
          onQuery: (text) => {
            counted.statements += 1
            if (text.includes("set state = 'claimed'")) counted.claims += 1
          },
        },
      )
      const sessionOf = (i: number) => `claims-${i}`
      const runs = [await heldResult(h, db, sessionOf(0)), await heldResult(h, db, sessionOf(1))]
      const open: OpenClaim[] = []
      for (let s = 0; s < SESSIONS; s += 1)
        for (let c = 0; c < CLAIMS_PER_SESSION; c += 1) open.push(openClaim(h, sessionOf(s)))
      try {
        const waiting = SESSIONS * CLAIMS_PER_SESSION
        // Every claim made its first try, found nothing and waits on its session's bell.
        await eventually(async () => (counted.claims === waiting ? true : undefined), {
          timeoutMs: 60_000,
          what: 'every claim to make its first try',
        })
        expect(counted.claims).toBe(waiting)

        const wakes: { claims: number; statements: number }[] = []
        for (const [i, runId] of runs.entries()) {
          const before = { ...counted }
          // The run ends without consuming its held result: one continuation becomes claimable.
          await h.client.completeRun(runId)
          const claimers = open.filter((o) => o.sessionId === sessionOf(i))
          const answers = await eventually(
            async () => {
              const settled = await Promise.all(
                claimers.map((o) => Promise.race([o.answer, Promise.resolve(-1)])),
              )
              return settled.includes(200) ? settled : undefined
            },
            { timeoutMs: 20_000, what: `a claim of ${sessionOf(i)} to take the continuation` },
          )
          expect(answers.filter((a) => a === 200)).toHaveLength(1)
          // The session's other claims woke too, tried once, and wait again.
          await eventually(
            async () => (counted.claims - before.claims >= CLAIMS_PER_SESSION ? true : undefined),
            { timeoutMs: 20_000, what: `every claim of ${sessionOf(i)} to try once` },
          )
          wakes.push({
            claims: counted.claims - before.claims,
            statements: counted.statements - before.statements,
          })
        }
        // Each end woke exactly its own session's claims; every other claim is still waiting.
        expect(wakes.map((w) => w.claims)).toEqual([CLAIMS_PER_SESSION, CLAIMS_PER_SESSION])
        const others = open.filter(
          (o) => o.sessionId !== sessionOf(0) && o.sessionId !== sessionOf(1),
        )
        const unanswered = await Promise.all(
          others.map((o) => Promise.race([o.answer, Promise.resolve(-1)])),
        )
        expect(unanswered.every((a) => a === -1)).toBe(true)
      } finally {
        for (const o of open) o.abort()
        await Promise.all(open.map((o) => o.answer))
      }
    },
  )
})
