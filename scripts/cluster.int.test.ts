// `npm run cluster` as a user runs it: started as a process, used through both of its APIs, its
// standby checked against its primary, then stopped with Ctrl-C (SIGINT) — after which nothing it
// started may be left running or listening.
import { spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { createBatonClient } from '@baton/client'
import { eventually, expect, test } from '@baton/testing'
import { REPO_ROOT } from './lib/services.ts'

/**
 * Whether a process with this id still runs: it exists (a signal 0 probes without sending
 * anything) and is not a zombie waiting for init to reap it (a daemonized server's parent is init).
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  try {
    // `pid (comm) state …`: the state follows the last parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false // gone between the two looks
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

test('npm run cluster: both APIs answer delegations, the standby replays the primary, and Ctrl-C stops every part', async ({
  track,
}) => {
  const devDir = mkdtempSync(join(tmpdir(), 'baton-cluster-test-'))
  const adminKey = randomBytes(24).toString('base64url')
  const child = spawn(process.execPath, ['scripts/cluster.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: '0', BATON_DEV_DIR: devDir, ADMIN_API_KEY: adminKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code ?? 0)),
  )
  let gone = false
  void exited.then(() => (gone = true))
  track({
    close: async () => {
      if (!gone) child.kill('SIGINT')
      await exited
      rmSync(devDir, { recursive: true, force: true })
    },
    isClosed: () => gone,
  })

  await eventually(
    () => {
      if (gone) return Promise.reject(new Error(`npm run cluster exited early:\n${output}`))
      return Promise.resolve(output.split('\n').includes('cluster: ready') ? true : undefined)
    },
    // Six Redis nodes, initdb, a base backup, PgBouncer and four Node processes on a busy machine.
    { what: 'the line `cluster: ready`', timeoutMs: 240_000 },
  )
  const ready = output.split('\n').filter((line) => line.startsWith('cluster: ready '))
  const parts = (word: string) => ready.filter((line) => line.startsWith(`cluster: ready ${word}`))
  expect(parts('redis ')).toHaveLength(6)
  expect(parts('redis ').filter((line) => line.includes(', master, slots '))).toHaveLength(3)
  expect(parts('postgres primary ')).toHaveLength(1)
  expect(parts('postgres standby ')).toHaveLength(1)
  expect(parts('pgbouncer ')).toHaveLength(1)
  expect(parts('api-')).toHaveLength(2)
  expect(parts('worker-')).toHaveLength(2)
  const pids = ready.map((line) => Number(/\(pid (\d+)/.exec(line)?.[1]))
  const ports = ready.flatMap((line) => {
    const port = /127\.0\.0\.1:(\d+)/.exec(line)?.[1]
    return port === undefined ? [] : [Number(port)]
  })
  expect(pids.every((pid) => Number.isInteger(pid) && pid > 0)).toBe(true)
  expect(ports).toHaveLength(6 + 3 + 2)
  expect(pids.every(alive)).toBe(true)

  const apiKey = /API key \(namespace default\)\s+(\S+)/.exec(output)?.[1] ?? ''
  const standbyUrl = /DATABASE_READ_URL\s+(\S+)/.exec(output)?.[1] ?? ''
  const primaryUrl = /Primary, directly\s+(\S+)/.exec(output)?.[1] ?? ''
  expect(/DATABASE_URL\s+(\S+) \(PgBouncer\)/.exec(output)?.[1]).toContain(
    `:${/ready pgbouncer 127\.0\.0\.1:(\d+)/.exec(output)?.[1]}/`,
  )
  const apiUrls = parts('api-').map((line) => /(http:\/\/\S+)/.exec(line)?.[1] ?? '')

  // One delegation through each API, each answered terminal by a worker.
  const session = `cluster-${randomUUID().slice(0, 8)}`
  const attemptIds: string[] = []
  for (const [i, baseUrl] of apiUrls.entries()) {
    const client = createBatonClient({ baseUrl, apiKey })
    const view = await client.delegateAndWait(
      {
        sessionId: `${session}-${i}`,
        name: 'scripted',
        prompt: JSON.stringify({ output: `through api-${i + 1}` }),
      },
      60_000,
    )
    expect(view).toMatchObject({ status: 'terminal', stopReason: 'completed' })
    attemptIds.push(view.attemptId)
  }

  // What the primary committed, the standby serves.
  const primary = new pg.Client({ connectionString: primaryUrl })
  const standby = new pg.Client({ connectionString: standbyUrl })
  await primary.connect()
  await standby.connect()
  try {
    const onPrimary = await primary.query<{ id: string }>(
      `select id from attempts where id = any($1::uuid[]) and status = 'terminal' order by id`,
      [attemptIds],
    )
    expect(onPrimary.rows).toHaveLength(2)
    expect((await standby.query('select pg_is_in_recovery() as r')).rows[0]).toEqual({ r: true })
    await eventually(
      async () => {
        const onStandby = await standby.query<{ id: string }>(
          `select id from attempts where id = any($1::uuid[]) and status = 'terminal' order by id`,
          [attemptIds],
        )
        return onStandby.rows.length === 2 ? true : undefined
      },
      { what: 'the terminal attempts on the standby', timeoutMs: 60_000 },
    )
  } finally {
    await primary.end()
    await standby.end()
  }

  child.kill('SIGINT')
  const code = await Promise.race([
    exited,
    new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 120_000)),
  ])
  expect(code, output).toBe(0)
  expect(output).toContain('cluster: stopped.')
  // Every process it printed and every port it listened on are gone once it has exited (a
  // server's last exit steps may trail the signal it answered by a moment).
  const left = async () => {
    const running = ready.filter((_, i) => alive(pids[i] ?? 0))
    const open: number[] = []
    for (const port of ports) if (await listening(port)) open.push(port)
    return { running, open }
  }
  const settled = await eventually(
    async () => {
      const now = await left()
      return now.running.length === 0 && now.open.length === 0 ? now : undefined
    },
    { what: 'every part stopped', timeoutMs: 30_000 },
  ).catch(left)
  expect(settled).toEqual({ running: [], open: [] })
}, 480_000)
