// `npm run up`: the whole system on this machine — migrated database, the API and two workers —
// against the Redis and Postgres named by REDIS_URL and DATABASE_URL. Ctrl-C stops everything.
//
// Works on a fresh clone: only `node:` modules are imported statically, so the Node check and the
// first-run `npm install` happen before anything from node_modules is loaded.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import net from 'node:net'
import { fileURLToPath } from 'node:url'

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url))
const WORKERS = 2
const STOP_GRACE_MS = 20_000 // above the worker's default SHUTDOWN_DEADLINE_MS (10 s)
const CHECK_TIMEOUT_MS = 2_000

const say = (line = ''): void => {
  process.stdout.write(`${line}\n`)
}
const fail = (lines: readonly string[]): never => {
  for (const line of lines) process.stderr.write(`${line}\n`)
  process.exit(1)
}

// 1. Node. (Below 22.18 Node cannot run .ts files without a flag, so this mostly guards flagged runs.)
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 18)) {
  fail([
    `up: Baton needs Node >= 22.18 (it runs TypeScript directly); this is Node ${process.versions.node}.`,
    '    Install Node 24:  npm install -g --prefix /usr/local node@24',
  ])
}

// 2. Dependencies, on the first run of a fresh clone.
if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  say('up: node_modules is missing; running npm install (first run only) …')
  // Under `npm run`, npm_execpath is the npm that started us; otherwise use npm from PATH.
  const npmCli = process.env.npm_execpath
  const result =
    npmCli !== undefined && npmCli.endsWith('.js')
      ? spawnSync(process.execPath, [npmCli, 'install'], { cwd: REPO_ROOT, stdio: 'inherit' })
      : spawnSync('npm', ['install'], { cwd: REPO_ROOT, stdio: 'inherit' })
  if (result.status !== 0) {
    fail([`up: npm install failed (${result.error?.message ?? `exit ${String(result.status)}`}).`])
  }
}

const { Redis } = await import('ioredis')
const { default: pg } = await import('pg')
const { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, prepareDatabase, startService, withDatabase } =
  await import('./lib/services.ts')
type RunningService = Awaited<ReturnType<typeof startService>>

const redisUrl = process.env.REDIS_URL ?? DEFAULT_REDIS_URL
const databaseUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
const host = process.env.HOST ?? '127.0.0.1'

/** A URL for printing: no password. */
function safe(url: string): string {
  const u = new URL(url)
  if (u.password !== '') u.password = '***'
  return u.toString()
}

function errorText(error: unknown): string {
  if (error instanceof AggregateError) return error.errors.map(errorText).join('; ')
  return error instanceof Error ? error.message || error.constructor.name : String(error)
}

// 3. Redis and Postgres must already run; say exactly how to start them when they do not.
async function checkRedis(): Promise<string | undefined> {
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: CHECK_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  })
  // ioredis rejects connect() with a bare "Connection is closed"; the error event has the cause.
  let cause: string | undefined
  redis.on('error', (error: Error) => {
    cause ??= error.message
  })
  try {
    await redis.connect()
    await redis.ping()
    const info = await redis.info('server')
    const version = /redis_version:(\S+)/.exec(info)?.[1]
    if (version !== undefined && Number(version.split('.')[0]) < 7) {
      say(`up: warning: Redis ${version} found; Baton is tested on Redis 7.`)
    }
    return undefined
  } catch (error) {
    return cause ?? errorText(error)
  } finally {
    redis.disconnect()
  }
}

/** undefined when Postgres answers; `refused` when it answers but rejects us (role, password). */
async function checkPostgres(): Promise<{ refused: boolean; message: string } | undefined> {
  // The maintenance database: the target database may not exist yet (it is created below).
  const client = new pg.Client({
    connectionString: withDatabase(databaseUrl, 'postgres'),
    connectionTimeoutMillis: CHECK_TIMEOUT_MS,
  })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('select 1')
    return undefined
  } catch (error) {
    const sqlstate = (error as { code?: unknown }).code
    const refused = typeof sqlstate === 'string' && /^[0-9A-Z]{5}$/.test(sqlstate)
    return { refused, message: errorText(error) }
  } finally {
    await client.end().catch(() => undefined)
  }
}

function postgresClusterVersion(): string {
  try {
    return readdirSync('/etc/postgresql').sort().at(-1) ?? '<version>'
  } catch {
    return '<version>'
  }
}

const [redisProblem, postgresProblem] = await Promise.all([checkRedis(), checkPostgres()])
if (redisProblem !== undefined || postgresProblem !== undefined) {
  const lines = ['']
  if (redisProblem !== undefined) {
    const port = new URL(redisUrl).port || '6379'
    lines.push(
      `up: Redis is not reachable at ${safe(redisUrl)} (${redisProblem}).`,
      '    Start it locally:',
      `      redis-server --daemonize yes --bind 127.0.0.1 --port ${port} --save '' --appendonly no`,
    )
  }
  if (postgresProblem?.refused === true) {
    lines.push(
      `up: Postgres at ${safe(withDatabase(databaseUrl, 'postgres'))} refused the connection (${postgresProblem.message}).`,
      '    Fix the user or password in DATABASE_URL.',
    )
  } else if (postgresProblem !== undefined) {
    lines.push(
      `up: Postgres is not reachable at ${safe(withDatabase(databaseUrl, 'postgres'))} (${postgresProblem.message}).`,
      '    Start it locally (Debian/Ubuntu packages; `ls /etc/postgresql` shows the version):',
      `      pg_ctlcluster --skip-systemctl-redirect ${postgresClusterVersion()} main start`,
    )
  }
  const missing = [
    redisProblem === undefined ? '' : 'redis',
    postgresProblem === undefined || postgresProblem.refused ? '' : 'postgres',
  ].filter((s) => s !== '')
  if (missing.length > 0) {
    lines.push(
      '    Or with Docker (ports published on 127.0.0.1, Postgres with trust auth):',
      `      docker compose -f infra/docker-compose.yml up -d ${missing.join(' ')}`,
      '    then run `npm run up` again (or set REDIS_URL / DATABASE_URL to servers that run).',
    )
  }
  fail(lines)
}

// 4. The database: create if missing, migrate.
say(`up: migrating ${safe(databaseUrl)} …`)
try {
  await prepareDatabase(databaseUrl)
} catch (error) {
  fail([`up: could not prepare the database: ${errorText(error)}`])
}

// 5. The port: a clear message beats an EADDRINUSE stack from the API; PORT=0 picks a free one.
function listenProbe(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address()
      const bound = typeof address === 'object' && address !== null ? address.port : port
      server.close(() => resolve(bound))
    })
  })
}
const requestedPort = Number(process.env.PORT ?? '3000')
let port = requestedPort
try {
  port = await listenProbe(requestedPort)
} catch (error) {
  fail([
    `up: cannot listen on ${host}:${requestedPort} (${errorText(error)}).`,
    '    Another Baton or another program may hold it: stop it, or run e.g.  PORT=3001 npm run up',
  ])
}

// 6. The processes.
const services: RunningService[] = []
let stopping = false
let forced = false

async function stopAll(exitCode: number): Promise<never> {
  stopping = true
  const running = services.filter((s) => s.child.exitCode === null && s.child.signalCode === null)
  if (running.length > 0) say(`up: stopping ${running.map((s) => s.name).join(', ')} …`)
  // API and workers stop in parallel: each handles SIGTERM (stop admission, abort and commit owned
  // children, close connections); anything still alive after the grace period gets SIGKILL.
  await Promise.all(running.map((s) => s.stop(STOP_GRACE_MS)))
  await stopStrayChildren()
  say(exitCode === 0 ? 'up: stopped.' : 'up: stopped after a failure.')
  process.exit(exitCode)
}

/**
 * A service that never logged its ready line is not in `services` (startService gives no handle on
 * failure), but it may still run: find our remaining child processes (Linux /proc) and stop them.
 */
function childPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may contain spaces, so split after ")".
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid
        } catch {
          return false
        }
      })
      .map(Number)
  } catch {
    return []
  }
}
async function stopStrayChildren(): Promise<void> {
  const signal = (pids: number[], name: NodeJS.Signals): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, name)
      } catch {
        // already gone
      }
    }
  }
  let stray = childPids()
  if (stray.length === 0) return
  signal(stray, 'SIGTERM')
  const deadline = Date.now() + STOP_GRACE_MS
  while ((stray = childPids()).length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  signal(stray, 'SIGKILL')
}

let startupDone = false
function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    if (forced) return
    forced = true
    say(`up: ${signal} again; killing everything now.`)
    for (const s of services) s.child.kill('SIGKILL')
    process.exit(1)
  }
  say(`up: ${signal} received.`)
  stopping = true
  // During startup the loop below notices `stopping` and stops what it started.
  if (startupDone) void stopAll(0)
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

function watch(service: RunningService): void {
  void service.exited.then((code) => {
    // A terminal Ctrl-C reaches the children too; let our own SIGINT handler run first.
    setTimeout(() => {
      if (stopping) return
      say(`up: ${service.name} exited unexpectedly (${String(code)}); stopping the rest.`)
      void stopAll(1)
    }, 250)
  })
}

const env: Record<string, string> = {
  REDIS_URL: redisUrl,
  DATABASE_URL: databaseUrl,
  HOST: host,
  PORT: String(port),
}
const plan: { name: string; app: 'api' | 'worker'; env: Record<string, string> }[] = [
  { name: 'api', app: 'api', env },
]
for (let i = 1; i <= WORKERS; i += 1) {
  // Owner ids must differ between workers; an explicit WORKER_ID gets a suffix.
  const workerId = process.env.WORKER_ID
  plan.push({
    name: `worker-${i}`,
    app: 'worker',
    env: workerId === undefined ? env : { ...env, WORKER_ID: `${workerId}-${i}` },
  })
}

for (const step of plan) {
  if (stopping) await stopAll(0)
  try {
    const service = await startService(step.name, step.app, step.env, { echo: true })
    services.push(service)
    watch(service)
  } catch (error) {
    say(`up: ${step.name} did not start: ${errorText(error)}`)
    await stopAll(1)
  }
}
if (stopping) await stopAll(0)
startupDone = true

const displayHost =
  host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host
const base = `http://${displayHost}:${port}`
const body = JSON.stringify({
  name: 'scripted',
  prompt: JSON.stringify({ output: 'hello from a child agent', delayMs: 200 }),
  wait: { timeoutMs: 5000 },
})
say('')
say(`Baton is up: the API and ${WORKERS} workers.`)
say(`  API        ${base}`)
say(`  docs       ${base}/docs`)
say(`  dashboard  ${base}/admin/queues`)
say(`  readiness  ${base}/readyz`)
say('')
say('Delegate to the `scripted` subagent and wait for its result:')
say(
  `  curl -s -X POST ${base}/v1/sessions/demo/delegations -H 'content-type: application/json' -d '${body}'`,
)
say('')
say('Ctrl-C stops everything.')
