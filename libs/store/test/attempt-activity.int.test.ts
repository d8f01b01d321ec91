// The ledger dashboard's last hour, minute by minute, from attempts placed at known times.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { readAttemptActivity, type Db } from '../src/index.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND

/** An attempt's times, in milliseconds from the start of the minute the test is about. */
interface Placed {
  readonly created: number
  readonly started?: number
  readonly terminal?: number
  readonly stopReason?: string
}

/**
 * Writes each attempt with its times (relative to `base`), its status following from them: a
 * terminal time makes it terminal, a start time running, neither accepted.
 */
async function place(db: Db, base: Date, attempts: readonly Placed[]): Promise<void> {
  const at = (offset: number | undefined) =>
    offset === undefined ? null : new Date(base.getTime() + offset)
  await sql`insert into sessions (id, namespace_id) values ('activity', 'default')`.execute(db)
  for (const a of attempts) {
    const agentId = randomUUID()
    const status =
      a.terminal !== undefined ? 'terminal' : a.started !== undefined ? 'running' : 'accepted'
    const terminal = status === 'terminal'
    await sql`
      insert into agents (id, namespace_id, session_id, name)
      values (${agentId}, 'default', 'activity', 'scripted')
    `.execute(db)
    await sql`
      insert into attempts (id, agent_id, namespace_id, session_id, name, prompt, status,
                            owner_id, owner_generation, lease_expires_at,
                            stop_reason, output_digest, output_bytes, fingerprint,
                            created_at, started_at, terminal_at)
      values (${randomUUID()}, ${agentId}, 'default', 'activity', 'scripted', '[]', ${status},
              ${a.started === undefined ? null : 'w1'}, ${a.started === undefined ? 0 : 1},
              ${status === 'running' ? sql`now() + interval '30 seconds'` : null},
              ${terminal ? (a.stopReason ?? 'completed') : null}, ${terminal ? 'd' : null},
              ${terminal ? 0 : null}, ${terminal ? 'f' : null},
              ${at(a.created)}, ${at(a.started)}, ${at(a.terminal)})
    `.execute(db)
  }
}

describe('activity of the last hour', () => {
  test('counts terminals per stop reason, wait percentiles and the queue and running gauges per minute', async ({
    db,
  }) => {
    // One transaction: `now()`, and with it the window, stays put while the attempts are written
    // and read, whatever the clock does meanwhile. Rolled back at the end.
    await db
      .transaction()
      .execute(async (trx) => {
        const clock = await sql<{ minute: Date }>`
          select date_trunc('minute', now()) as minute
        `.execute(trx)
        const current = clock.rows[0]?.minute
        if (current === undefined) throw new Error('no clock')
        // The minute the test is about, ten before the current one; the window's first minute.
        const base = new Date(current.getTime() - 10 * MINUTE)
        const windowStart = current.getTime() - 59 * MINUTE - base.getTime()
        await place(trx, base, [
          // Finished two hours ago: outside the window, nowhere in it.
          {
            created: -120 * MINUTE,
            started: -120 * MINUTE + SECOND,
            terminal: -120 * MINUTE + 2 * SECOND,
          },
          // Finished a millisecond before the window: nowhere.
          { created: windowStart - 5 * SECOND, terminal: windowStart - 1, stopReason: 'aborted' },
          // Cancelled while queued, terminal as the window opens: counted in its first minute.
          { created: windowStart - 5 * SECOND, terminal: windowStart, stopReason: 'aborted' },
          // Queued two hours ago and still queued.
          { created: -120 * MINUTE },
          // Running since two hours ago, still running.
          { created: -180 * MINUTE, started: -120 * MINUTE },
          // Queued and claimed before the window, terminal within the base minute.
          { created: -70 * MINUTE, started: -65 * MINUTE, terminal: 5 * SECOND },
          // Four more terminal within the base minute, one of them never ran (cancelled queued).
          { created: 0, started: 1 * SECOND, terminal: 2 * SECOND },
          { created: 0, started: 2 * SECOND, terminal: 4 * SECOND },
          {
            created: -60 * SECOND,
            started: 10 * SECOND,
            terminal: 30 * SECOND,
            stopReason: 'error',
          },
          { created: 20 * SECOND, terminal: 50 * SECOND, stopReason: 'aborted' },
          // Queued across five minute ends, running across two, terminal five minutes on.
          { created: -90 * SECOND, started: 185 * SECOND, terminal: 310 * SECOND },
        ])

        const activity = await readAttemptActivity(trx, { minutes: 60 })
        const minutes = activity.minutes
        expect(minutes).toHaveLength(60)
        expect(minutes.map((m) => m.minute.getTime())).toEqual(
          Array.from({ length: 60 }, (_, i) => current.getTime() - (59 - i) * MINUTE),
        )
        // Minutes relative to the base minute: the window runs from -49 to 10 (the current one).
        const at = (relative: number) => {
          const found = minutes.find(
            (m) => m.minute.getTime() === base.getTime() + relative * MINUTE,
          )
          if (found === undefined) throw new Error(`no minute ${relative}`)
          return found
        }
        const relatives = Array.from({ length: 60 }, (_, i) => i - 49)

        expect(relatives.map((r) => [r, at(r).terminals])).toEqual(
          relatives.map((r) => [
            r,
            r === -49
              ? { aborted: 1 }
              : r === 0
                ? { completed: 3, error: 1, aborted: 1 }
                : r === 5
                  ? { completed: 1 }
                  : {},
          ]),
        )
        // Accept to terminal in the base minute: 2 s, 4 s, 30 s, 90 s and 70 min 5 s.
        expect(at(0).waitP50Ms).toBe(30 * SECOND)
        const slowest = 70 * MINUTE + 5 * SECOND
        expect(at(0).waitP99Ms).toBeCloseTo(90 * SECOND + 0.96 * (slowest - 90 * SECOND), 3)
        expect([at(5).waitP50Ms, at(5).waitP99Ms]).toEqual([400 * SECOND, 400 * SECOND])
        expect([at(-49).waitP50Ms, at(-49).waitP99Ms]).toEqual([5 * SECOND, 5 * SECOND])
        expect(
          relatives.filter((r) => ![-49, 0, 5].includes(r)).map((r) => at(r).waitP50Ms),
        ).toEqual(relatives.filter((r) => ![-49, 0, 5].includes(r)).map(() => null))

        // At each minute's end: the old backlog throughout, plus the attempt queued from minute
        // -2 to minute 3 and, at the end of minute -1, the one claimed in minute 0.
        expect(relatives.map((r) => [r, at(r).queued])).toEqual(
          relatives.map((r) => [r, r === -2 ? 2 : r === -1 ? 3 : r >= 0 && r <= 2 ? 2 : 1]),
        )
        // The long runner throughout, plus the one claimed before the window until the base
        // minute, and the one running from minute 3 to minute 5.
        expect(relatives.map((r) => [r, at(r).running])).toEqual(
          relatives.map((r) => [r, r <= -1 ? 2 : r >= 3 && r <= 4 ? 2 : 1]),
        )
        // The current minute is read at `now`: what is queued and running now.
        expect(activity.now.getTime()).toBeGreaterThanOrEqual(current.getTime())
        expect(at(10)).toMatchObject({ queued: 1, running: 1, terminals: {} })
        throw new Rollback()
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error
      })
  })

  test('a window of no minutes is refused', async ({ db }) => {
    await expect(readAttemptActivity(db, { minutes: 0 })).rejects.toThrow(RangeError)
    await expect(readAttemptActivity(db, { minutes: 1.5 })).rejects.toThrow(RangeError)
  })
})

/** Thrown to roll the test's transaction back once its assertions passed. */
class Rollback extends Error {}
