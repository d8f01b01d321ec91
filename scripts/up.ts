// `npm run up`: the whole system on this machine — Redis, Postgres with a migrated database, the
// API and two workers. Redis and Postgres are the ones at REDIS_URL and DATABASE_URL when they
// answer; otherwise up starts its own in BATON_DEV_DIR (default .baton/dev). The API and workers are
// supervised: one that exits unexpectedly is restarted. Ctrl-C stops everything up started.
//
// Works on a fresh clone: only `node:` modules (and lib/npm.ts, which imports only those) are
// imported statically, so the Node check and the first-run `npm install` happen before anything
// from node_modules is loaded.
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { DevKeys } from './lib/dev-keys.ts'
import type { OwnServer } from './lib/own-service.ts'
import { runNpm } from './lib/npm.ts'

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url))
const WORKERS = 2
const STOP_GRACE_MS = 20_000 // above the worker's default SHUTDOWN_DEADLINE_MS (10 s)

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
  // `npm ci` installs exactly the lockfile and never rewrites it, so a fresh clone stays clean.
  say('up: node_modules is missing; running npm ci (first run only) …')
  const result = runNpm(['ci'], REPO_ROOT)
  if (result.status !== 0) {
    fail([`up: npm ci failed (${result.error?.message ?? `exit ${String(result.status)}`}).`])
  }
}

const { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, prepareDatabase, startService } =
  await import('./lib/services.ts')
const { devDirectory, errorText, safeUrl } = await import('./lib/dev-service.ts')
const { ensureRedis } = await import('./lib/dev-redis.ts')
const { ensurePostgres } = await import('./lib/dev-postgres.ts')
const { createSupervisor } = await import('./lib/supervisor.ts')
const { listenProbe } = await import('./lib/listen-probe.ts')
const { DEV_NAMESPACE, ensureDevKeys } = await import('./lib/dev-keys.ts')

const redisUrl = process.env.REDIS_URL ?? DEFAULT_REDIS_URL
const databaseUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
const host = process.env.HOST ?? '127.0.0.1'
const devDir = devDirectory(process.env, REPO_ROOT)

/** Servers up started itself; stopped last, after the API and workers have stopped with their help. */
const ownServers: { name: string; server: OwnServer }[] = []
let stopping = false
let forced = false
let startupDone = false
// A child that exits while up is stopping (a terminal Ctrl-C reaches it too) is not restarted.
const supervisor = createSupervisor(say, () => stopping)

// Own servers run in their own process group (Ctrl-C does not reach them): whatever way up ends,
// ask them to stop.
process.on('exit', () => {
  for (const { server } of ownServers) server.stopNow()
})

async function stopAll(exitCode: number): Promise<never> {
  stopping = true
  const running = supervisor.running()
  if (running.length > 0) say(`up: stopping ${running.join(', ')} …`)
  // API and workers stop in parallel: each handles SIGTERM (stop admission, abort and commit owned
  // children, close connections); anything still alive after the grace period gets SIGKILL.
  await supervisor.stop(STOP_GRACE_MS)
  await stopStrayChildren()
  const own = ownServers.filter(({ server }) => !server.hasExited())
  if (own.length > 0) say(`up: stopping its own ${own.map((o) => o.name).join(', ')} …`)
  await Promise.all(own.map(({ server }) => server.stop()))
  say(exitCode === 0 ? 'up: stopped.' : 'up: stopped after a failure.')
  process.exit(exitCode)
}

/**
 * A process that never logged its ready line has no handle (startService gives none on failure),
 * but it may still run: find our remaining child processes (Linux /proc) and stop them. Own
 * servers are children too; they are stopped after this, in order.
 */
function childPids(): number[] {
  const own = new Set(ownServers.map(({ server }) => server.pid))
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
      .filter((pid) => !own.has(pid))
  } catch {
    return []
  }
}
function signalPids(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name)
    } catch {
      // already gone
    }
  }
}
async function stopStrayChildren(): Promise<void> {
  let stray = childPids()
  if (stray.length === 0) return
  signalPids(stray, 'SIGTERM')
  const deadline = Date.now() + STOP_GRACE_MS
  while ((stray = childPids()).length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  signalPids(stray, 'SIGKILL')
}

function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    if (forced) return
    forced = true
    say(`up: ${signal} again; killing everything now.`)
    signalPids(childPids(), 'SIGKILL')
    process.exit(1) // the exit handler asks the own servers to stop
  }
  say(`up: ${signal} received.`)
  stopping = true
  // During startup each step below notices `stopping` and stops what was started.
  if (startupDone) void stopAll(0)
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

// 3. Redis and Postgres: the ones at the URLs when they answer, else up's own.
const warn = (line: string): void => say(`up: warning: ${line}`)
const ensured = await Promise.allSettled([
  ensureRedis(redisUrl, devDir, warn),
  ensurePostgres(databaseUrl, devDir, process.env, (line) => say(`up: ${line}`)),
])
const problems: string[] = []
for (const result of ensured) {
  if (result.status === 'rejected') {
    problems.push(`up: ${errorText(result.reason)}`)
    continue
  }
  say(`up: ${result.value.said}`)
  if (result.value.server !== undefined) {
    ownServers.push({ name: result.value.name, server: result.value.server })
  }
}
if (problems.length > 0) {
  for (const line of problems) process.stderr.write(`${line}\n`)
  process.stderr.write('    (or set REDIS_URL / DATABASE_URL to servers that run)\n')
  await stopAll(1)
}
if (stopping) await stopAll(0)

// 4. The database: create if missing, migrate.
say(`up: migrating ${safeUrl(databaseUrl)} …`)
try {
  await prepareDatabase(databaseUrl)
} catch (error) {
  say(`up: could not prepare the database: ${errorText(error)}`)
  await stopAll(1)
}

// The developer's keys: a namespace `dev` with an API key, and the admin key (unless one is set).
let keys: DevKeys | undefined
try {
  keys = await ensureDevKeys(databaseUrl, devDir)
  say(`up: ${keys.said}`)
} catch (error) {
  say(`up: could not prepare the dev keys: ${errorText(error)}`)
  await stopAll(1)
}
const adminKey = process.env.ADMIN_API_KEY ?? keys?.adminKey ?? ''

// 5. The port: a clear message beats an EADDRINUSE stack from the API; PORT=0 picks a free one.
const requestedPort = Number(process.env.PORT ?? '3000')
let port = requestedPort
try {
  port = await listenProbe(host, requestedPort)
} catch (error) {
  say(`up: cannot listen on ${host}:${requestedPort} (${errorText(error)}).`)
  say(
    '    Another Baton or another program may hold it: stop it, or run e.g.  PORT=3001 npm run up',
  )
  await stopAll(1)
}

// 6. The API and workers, supervised.
const env: Record<string, string> = {
  REDIS_URL: redisUrl,
  DATABASE_URL: databaseUrl,
  HOST: host,
  PORT: String(port),
  ADMIN_API_KEY: adminKey,
  // The demo hosted parent (docs/hosted.md), unless the environment names other profiles.
  PROFILES_FILE: process.env.PROFILES_FILE ?? `${REPO_ROOT}examples/hosted/profiles.toml`,
  SCRIPTED_MODELS_DIR: process.env.SCRIPTED_MODELS_DIR ?? `${REPO_ROOT}examples/hosted/scripts`,
}
const processes = [
  {
    name: 'api',
    start: async () => {
      const service = await startService('api', 'api', env, { echo: true })
      say(`up: api started (pid ${String(service.child.pid)})`)
      return service
    },
  },
]
/** Worker `i`'s metrics port (1-based): consecutive from METRICS_PORT, or 0 (off) for all. */
function workerMetricsPort(i: number): string {
  const first = Number(process.env.METRICS_PORT ?? DEFAULT_WORKER_METRICS_PORT)
  return first === 0 ? '0' : String(first + i - 1)
}
const DEFAULT_WORKER_METRICS_PORT = 9464

for (let i = 1; i <= WORKERS; i += 1) {
  const name = `worker-${i}`
  processes.push({
    name,
    start: async () => {
      // Lease owner ids must differ between workers and between incarnations of one worker: a
      // restarted worker must not pass for the one whose leases the reconciler is about to expire.
      const workerId = `${process.env.WORKER_ID ?? hostname()}-${i}-${randomUUID().slice(0, 8)}`
      const service = await startService(
        name,
        'worker',
        // Each worker serves its metrics on a port of its own: 9464, 9465, … (METRICS_PORT sets
        // the first; 0 turns them off).
        { ...env, WORKER_ID: workerId, METRICS_PORT: workerMetricsPort(i) },
        { echo: true },
      )
      say(`up: ${name} started (pid ${String(service.child.pid)}, WORKER_ID ${workerId})`)
      return service
    },
  })
}
for (const spec of processes) {
  if (stopping) await stopAll(0)
  try {
    await supervisor.add(spec)
  } catch (error) {
    say(`up: ${spec.name} did not start: ${errorText(error)}`)
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
say(`  ledger     ${base}/admin  (user: admin, password: the admin key below)`)
say(`  queues     ${base}/admin/queues  (the same credentials)`)
say(
  `  metrics    ${base}/metrics (admin key); workers: ${workerMetricsPort(1) === '0' ? 'off' : `port ${workerMetricsPort(1)} and up`}`,
)
say(`  readiness  ${base}/readyz`)
say('')
say('Delegate to the `scripted` subagent and wait for its result:')
say(
  `  curl -s -X POST ${base}/v1/sessions/demo/delegations -H 'authorization: Bearer ${keys?.apiKey ?? ''}' -H 'content-type: application/json' -d '${body}'`,
)
say('')
say(`API key (namespace ${DEV_NAMESPACE}):  ${keys?.apiKey ?? ''}`)
say(`Admin key:                ${adminKey}`)
say(`The CLI:  BATON_URL=${base} BATON_API_KEY=${keys?.apiKey ?? ''} npm run -s baton -- --help`)
say('')
say('A process that exits unexpectedly is restarted. Ctrl-C stops everything.')
