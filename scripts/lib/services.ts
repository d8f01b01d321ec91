// Shared by the runnable scripts (up, bench, chaos): database preparation and process handling.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { createDb, migrateToLatest } from '@baton/store'

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

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

/** Creates the database named in `url` if missing (optionally empty it first), then migrates it. */
export async function prepareDatabase(
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

export interface RunningService {
  readonly name: string
  readonly child: ChildProcess
  readonly exited: Promise<number | string>
  stop(graceMs?: number): Promise<void>
}

/**
 * Starts `apps/<app>/src/main.ts` as a child process and resolves once its log line says it is
 * ready. Output is forwarded line by line with a name prefix when `echo` is set.
 */
export async function startService(
  name: string,
  app: 'api' | 'worker',
  env: Record<string, string>,
  options: { echo?: boolean; timeoutMs?: number } = {},
): Promise<RunningService> {
  const ready = app === 'api' ? 'api listening' : 'worker started'
  const child = spawn(process.execPath, [`apps/${app}/src/main.ts`], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ?? code ?? 0))
  })
  let log = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not become ready:\n${log}`)),
      options.timeoutMs ?? 30_000,
    )
    const onChunk = (chunk: Buffer): void => {
      const text = chunk.toString()
      if (options.echo === true) {
        for (const line of text.split('\n'))
          if (line.trim() !== '') process.stdout.write(`[${name}] ${line}\n`)
      }
      if (log.length < 20_000) log += text
      if (log.includes(ready)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout.on('data', onChunk)
    child.stderr.on('data', onChunk)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (${String(code)}) before it was ready:\n${log}`))
    })
  })
  return {
    name,
    child,
    exited,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }
}
