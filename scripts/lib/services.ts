// Shared by the runnable scripts (up, bench, chaos): database preparation and the app launcher.
import pg from 'pg'
import { createDb, issueApiKey, migrateToLatest } from '@baton/store'
import { launchLogging } from './log-level.ts'
import { prettyLogLine } from './pretty-log.ts'
import { REPO_ROOT, startApp, type AppProcess, type BatonApp } from '@baton/testing/processes'

export { REPO_ROOT }

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/baton'

export function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

export function databaseName(url: string): string {
  return new URL(url).pathname.replace(/^\//, '') || 'postgres'
}

/** Creates the database named in `url` if missing; with `fresh`, drops it first. */
export async function createDatabase(
  url: string,
  options: { fresh?: boolean } = {},
): Promise<void> {
  const name = databaseName(url)
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsupported database name "${name}"`)
  const admin = new pg.Client({ connectionString: withDatabase(url, 'postgres') })
  await admin.connect()
  try {
    if (options.fresh === true) await admin.query(`drop database if exists ${name} with (force)`)
    const exists = await admin.query('select 1 from pg_database where datname = $1', [name])
    if (exists.rowCount === 0) await admin.query(`create database ${name}`)
  } finally {
    await admin.end()
  }
}

/** Drops and recreates the database named in `url`, then runs `schemaSql` in it. */
export async function createDatabaseWithSchema(url: string, schemaSql: string): Promise<void> {
  await createDatabase(url, { fresh: true })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(schemaSql)
  } finally {
    await client.end()
  }
}

/** Drops the database named in `url`, if it exists. */
export async function dropDatabase(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: withDatabase(url, 'postgres') })
  await admin.connect()
  try {
    await admin.query(`drop database if exists ${databaseName(url)} with (force)`)
  } finally {
    await admin.end()
  }
}

/** Creates the database named in `url` if missing (optionally empty it first), then migrates it. */
export async function prepareDatabase(
  url: string,
  options: { fresh?: boolean } = {},
): Promise<void> {
  await createDatabase(url, options)
  const db = createDb({
    connectionString: url,
    maxConnections: 1,
    applicationName: 'baton-scripts',
  })
  try {
    await migrateToLatest(db)
  } finally {
    await db.destroy()
  }
}

/** A fresh API key of namespace `default` in the migrated database at `url`, named `name`. */
export async function issueDefaultKey(url: string, name: string): Promise<string> {
  const db = createDb({
    connectionString: url,
    maxConnections: 1,
    applicationName: 'baton-scripts',
  })
  try {
    const issued = await issueApiKey(db, { namespaceId: 'default', name })
    if (issued === undefined) throw new Error(`${databaseName(url)} has no default namespace`)
    return issued.key
  } finally {
    await db.destroy()
  }
}

export type RunningService = AppProcess

/**
 * Echoes a process's output line by line with its name in front, each line through `format`, the
 * lines `echoes` accepts (all by default).
 */
export function echoLines(
  name: string,
  write: (line: string) => void,
  format: (line: string) => string = (line) => line,
  echoes: (line: string) => boolean = () => true,
): (chunk: Buffer) => void {
  let partial = ''
  return (chunk) => {
    const lines = (partial + chunk.toString()).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) {
      if (line.trim() !== '' && echoes(line)) write(`[${name}] ${format(line)}\n`)
    }
  }
}

/**
 * Starts `apps/<app>/src/main.ts` as a child process and resolves once its log line says it is
 * ready. Output is forwarded line by line with a name prefix when `echo` is set: human-readable on
 * a terminal, the apps' JSON lines as they are anywhere else. A LOG_LEVEL quieter than `info` (in
 * `env`, else in this process's environment) is applied to the echo (see log-level.ts).
 */
export function startService(
  name: string,
  app: BatonApp,
  env: Record<string, string>,
  options: { echo?: boolean; timeoutMs?: number } = {},
): Promise<RunningService> {
  const logging = launchLogging(env.LOG_LEVEL ?? process.env.LOG_LEVEL)
  const appEnv = logging.level === undefined ? env : { ...env, LOG_LEVEL: logging.level }
  return startApp(app, appEnv, {
    name,
    timeoutMs: options.timeoutMs ?? 30_000,
    outputLimit: 20_000,
    ...(options.echo === true
      ? {
          onOutput: echoLines(
            name,
            (line) => process.stdout.write(line),
            process.stdout.isTTY ? prettyLogLine : undefined,
            logging.echoes,
          ),
        }
      : {}),
  })
}
