// A PgBouncer in transaction mode in front of a Postgres: for the test project that runs Baton's
// suites through one (`integration-pgbouncer`) and for the scripts that start a local cluster
// (scripts/lib/pgbouncer.ts re-exports it). The operator's settings are in docs/operations.md,
// "Postgres behind PgBouncer".
import { spawn, spawnSync } from 'node:child_process'
import { accessSync, constants, createWriteStream, mkdirSync, writeFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { postgresAnswers } from './global-setup.ts'

export interface PgBouncerOptions {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number
  /** The Postgres every database name is forwarded to. */
  readonly upstream: { readonly host: string; readonly port: number }
  /** Where its ini, user list and log go. */
  readonly dir: string
  /** Server connections per database and user (default 20). */
  readonly poolSize?: number
}

export interface PgBouncer {
  readonly port: number
  readonly pid: number | undefined
  /** A URL of `database` through PgBouncer, as user `postgres`. */
  url(database: string): string
  stop(): Promise<void>
  /** The same as `stop`, for `track`. */
  close(): Promise<void>
  isClosed(): boolean
}

/**
 * Startup parameters node-postgres sends that PgBouncer cannot track across the server
 * connections a client's transactions land on (it refuses a client that sends them otherwise):
 * Baton's per-connection timeouts (libs/store/src/db.ts says what holds then).
 */
export const PGBOUNCER_IGNORED_STARTUP_PARAMETERS = [
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'extra_float_digits',
] as const

const SEARCH_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/bin']

/** The `pgbouncer` executable (PATH, then where Debian puts it), or undefined. */
export function findPgBouncer(path = process.env.PATH ?? ''): string | undefined {
  const dirs = [...path.split(delimiter).filter((d) => d !== ''), ...SEARCH_DIRS]
  for (const dir of dirs) {
    const candidate = join(dir, 'pgbouncer')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

/** The installed version as [major, minor] (`pgbouncer --version` prints `PgBouncer 1.18.0`). */
function versionOf(binary: string): readonly [number, number] {
  const out = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout ?? ''
  const match = /PgBouncer (\d+)\.(\d+)/.exec(out)
  if (match === null) throw new Error(`cannot read the version of ${binary}: ${out}`)
  return [Number(match[1]), Number(match[2])]
}

/**
 * Starts `pgbouncer` in transaction mode with an ini of its own in `dir`: every database name
 * forwarded to `upstream` (the `*` entry), user `postgres` let in without a password (`trust`,
 * the name listed in an auth file; the upstream authenticates its own way), and resolves once a
 * query through it is answered. From PgBouncer 1.21 on, which can keep protocol-level prepared
 * statements in transaction mode, `max_prepared_statements = 0` keeps the behaviour of older ones,
 * so a run shows what `DB_PREPARED_STATEMENTS=false` is for on any version.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = findPgBouncer()
  if (binary === undefined) {
    throw new Error(
      'pgbouncer is not installed (Debian and Ubuntu: `apt-get install -y pgbouncer`; macOS: `brew install pgbouncer`)',
    )
  }
  const [major, minor] = versionOf(binary)
  mkdirSync(options.dir, { recursive: true })
  const authFile = join(options.dir, 'userlist.txt')
  writeFileSync(authFile, '"postgres" ""\n')
  const ini = join(options.dir, 'pgbouncer.ini')
  const lines = [
    '[databases]',
    `* = host=${options.upstream.host} port=${options.upstream.port}`,
    '',
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${options.port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${authFile}`,
    'pool_mode = transaction',
    `ignore_startup_parameters = ${PGBOUNCER_IGNORED_STARTUP_PARAMETERS.join(', ')}`,
    `default_pool_size = ${options.poolSize ?? 20}`,
    'max_client_conn = 2000',
    // Server connections go back to the pool at once; an idle one is closed after a minute.
    'server_idle_timeout = 60',
    ...(major > 1 || minor >= 21 ? ['max_prepared_statements = 0'] : []),
    // PgBouncer refuses to run as root; it reads this file, then becomes this user.
    ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
  ]
  writeFileSync(ini, `${lines.join('\n')}\n`)

  // Logs go to stderr (a log file would have to be writable by the user it becomes).
  // Its own process group: a Ctrl-C in a terminal reaches the script that started it, not
  // PgBouncer, whose shutdown on SIGINT would wait for the clients still connected through it.
  const child = spawn(binary, [ini], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const log = createWriteStream(join(options.dir, 'pgbouncer.log'), { flags: 'a' })
  let tail = ''
  const collect = (chunk: Buffer): void => {
    log.write(chunk)
    tail = (tail + chunk.toString()).slice(-4_000)
  }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  let exited = false
  const exit = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      tail += `\n${error.message}`
      exited = true
      resolve()
    })
    child.once('exit', () => {
      exited = true
      resolve()
    })
  })
  void exit.then(() => log.end())

  const url = (database: string): string =>
    `postgres://postgres@127.0.0.1:${options.port}/${database}`
  const stop = async (): Promise<void> => {
    if (exited) return
    child.kill('SIGTERM') // PgBouncer's immediate shutdown
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
    await exit
    clearTimeout(timer)
  }

  const deadline = Date.now() + 15_000
  while (!(await postgresAnswers(url('postgres')))) {
    if (exited) throw new Error(`pgbouncer exited before it answered:\n${tail}`)
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`pgbouncer did not answer within 15 s:\n${tail}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { port: options.port, pid: child.pid, url, stop, close: stop, isClosed: () => exited }
}
