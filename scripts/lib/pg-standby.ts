// A streaming standby of a local Postgres, for a cluster on one machine: `pg_basebackup -R` from
// the primary (which writes the standby's primary_conninfo and standby.signal), then the installed
// server binaries' `pg_ctl` on a port of its own. As root (a container, CI) it runs as the user
// `npm run up`'s own Postgres runs as (dev-postgres.ts).
import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { mkdirOpen, reachable, serverUser, type OsUser } from './dev-postgres.ts'
import { findInstalledPostgres } from './postgres-binaries.ts'
import { withDatabase } from './services.ts'

export interface StandbyOptions {
  /** The primary, as a superuser (trust or a password in the URL); its database is not used. */
  readonly primaryUrl: string
  /** The port the standby listens on, on 127.0.0.1. */
  readonly port: number
  /** Where its data directory and log go (emptied first). */
  readonly dir: string
}

export interface Standby {
  /** A URL of `database` on the standby (read-only), as the primary's user. */
  url(database: string): string
  /** The standby's postmaster, from its `postmaster.pid` (undefined once it is gone). */
  pid(): number | undefined
  /** Fast shutdown; the data directory stays. */
  stop(): Promise<void>
}

/**
 * Copies the primary with `pg_basebackup -R -X stream` and starts the copy as a hot standby;
 * resolves once it accepts connections and reports `pg_is_in_recovery()`. The primary must let
 * its user make a replication connection from 127.0.0.1 (`host replication all 127.0.0.1/32
 * trust` in pg_hba.conf; `npm run up`'s own cluster has it) and have `wal_level` `replica` or
 * `logical` (the default is `replica`).
 */
export async function startStandby(options: StandbyOptions): Promise<Standby> {
  const binaries = findInstalledPostgres(process.env)
  if (binaries === undefined) throw new Error('no PostgreSQL 15+ server binaries are installed')
  const bin = dirname(binaries.postgres)
  const runAs = serverUser()
  const dataDir = join(reachableDir(options.dir, runAs), 'standby')
  const logFile = join(dataDir, 'standby.log')
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(dataDir, { mode: 0o700 })
  if (runAs !== undefined) chownSync(dataDir, runAs.uid, runAs.gid)

  run(runAs, join(bin, 'pg_basebackup'), [
    '--dbname',
    withDatabase(options.primaryUrl, 'postgres'),
    '--pgdata',
    dataDir,
    '--write-recovery-conf',
    '--wal-method=stream',
    '--checkpoint=fast',
    '--no-sync',
  ])
  // A packaged cluster (Debian's) keeps its configuration files outside the data directory:
  // the copy then has none, and a server needs both.
  if (!existsSync(join(dataDir, 'postgresql.conf')))
    writeOwned(runAs, dataDir, 'postgresql.conf', '')
  if (!existsSync(join(dataDir, 'pg_hba.conf'))) {
    writeOwned(runAs, dataDir, 'pg_hba.conf', 'host all all 127.0.0.1/32 trust\n')
  }
  const settings = [
    `-p ${options.port}`,
    '-c listen_addresses=127.0.0.1',
    // TCP only: the default socket directory may belong to the primary.
    "-c unix_socket_directories=''",
    '-c hot_standby=on',
    // A packaged primary's own paths, if its postgresql.conf came along with the copy.
    "-c external_pid_file=''",
    `-c hba_file=${join(dataDir, 'pg_hba.conf')}`,
    `-c ident_file=${join(dataDir, 'pg_ident.conf')}`,
  ]
  if (!existsSync(join(dataDir, 'pg_ident.conf'))) writeOwned(runAs, dataDir, 'pg_ident.conf', '')
  run(runAs, join(bin, 'pg_ctl'), [
    'start',
    '--pgdata',
    dataDir,
    '--log',
    logFile,
    '--wait',
    '--timeout=60',
    '-o',
    settings.join(' '),
  ])

  const primary = new URL(options.primaryUrl)
  const url = (database: string): string => {
    const u = new URL(primary.toString())
    u.hostname = '127.0.0.1'
    u.port = String(options.port)
    u.pathname = `/${database}`
    return u.toString()
  }
  const stop = (): Promise<void> => {
    run(runAs, join(bin, 'pg_ctl'), ['stop', '--pgdata', dataDir, '--mode=fast', '--wait'])
    return Promise.resolve()
  }
  try {
    await untilInRecovery(url('postgres'))
  } catch (error) {
    await stop()
    throw error
  }
  const pid = (): number | undefined => {
    try {
      const first = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]
      return first === undefined ? undefined : Number(first)
    } catch {
      return undefined // not running
    }
  }
  return { url, pid, stop }
}

/** `dir` when the server's user can reach it, else a directory of its own under the temp dir. */
function reachableDir(dir: string, runAs: OsUser | undefined): string {
  if (runAs === undefined) {
    mkdirSync(dir, { recursive: true })
    return dir
  }
  mkdirOpen(dir)
  if (reachable(dir, runAs)) return dir
  const fallback = join(
    tmpdir(),
    `baton-standby-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`,
  )
  mkdirOpen(fallback)
  return fallback
}

function writeOwned(runAs: OsUser | undefined, dir: string, name: string, text: string): void {
  const file = join(dir, name)
  writeFileSync(file, text, { mode: 0o600 })
  if (runAs !== undefined) chownSync(file, runAs.uid, runAs.gid)
}

function run(runAs: OsUser | undefined, command: string, args: readonly string[]): void {
  const result = spawnSync(command, args, {
    cwd: '/',
    encoding: 'utf8',
    ...(runAs === undefined ? {} : { uid: runAs.uid, gid: runAs.gid }),
  })
  if (result.status === 0) return
  const output = `${result.stderr}${result.stdout}`
  const hint = /no pg_hba\.conf entry for replication/.test(output)
    ? '\nThe primary refuses replication connections: add `host replication all 127.0.0.1/32 trust` (or a password method) to its pg_hba.conf and reload it.'
    : ''
  throw new Error(
    `${command} failed (${result.error?.message ?? `exit ${String(result.status)}`}):\n${output}${hint}`,
  )
}

async function untilInRecovery(url: string): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    let last: string
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 })
    client.on('error', () => undefined)
    try {
      await client.connect()
      const { rows } = await client.query<{ r: boolean }>('select pg_is_in_recovery() as r')
      if (rows[0]?.r === true) return
      last = 'it is not in recovery'
    } catch (error) {
      last = error instanceof Error ? error.message : String(error)
    } finally {
      await client.end().catch(() => undefined)
    }
    if (Date.now() > deadline) throw new Error(`the standby is not up after 30 s: ${last}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
