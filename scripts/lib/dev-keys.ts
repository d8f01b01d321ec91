// The keys `npm run up` gives a developer: a namespace `dev` with an API key, and an admin key,
// made on the first run and kept in the dev directory (mode 0600) so later runs print the same
// ones. A kept key the ledger no longer honours (a fresh database, a revocation) is replaced.
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createDb, createNamespace, findLiveApiKey, issueApiKey } from '@baton/store'

export const DEV_NAMESPACE = 'dev'

export interface DevKeys {
  /** A key of namespace `dev`: what the printed curl example sends. */
  readonly apiKey: string
  /** The API's ADMIN_API_KEY: namespace and key management, the queue dashboard. */
  readonly adminKey: string
  /** What up should say about them (made now, or kept from an earlier run). */
  readonly said: string
}

export async function ensureDevKeys(databaseUrl: string, devDir: string): Promise<DevKeys> {
  await mkdir(devDir, { recursive: true })
  const adminFile = join(devDir, 'admin-key')
  const apiFile = join(devDir, 'api-key')
  const adminKey =
    (await readKept(adminFile)) ?? (await keep(adminFile, randomBytes(32).toString('base64url')))
  const db = createDb({ connectionString: databaseUrl, maxConnections: 1 })
  try {
    const kept = await readKept(apiFile)
    if (kept !== undefined && (await findLiveApiKey(db, kept)) !== undefined) {
      return { apiKey: kept, adminKey, said: `keys: using the dev keys kept in ${devDir}` }
    }
    await createNamespace(db, { namespaceId: DEV_NAMESPACE, description: 'npm run up' })
    const issued = await issueApiKey(db, { namespaceId: DEV_NAMESPACE, name: 'npm run up' })
    if (issued === undefined) throw new Error(`namespace ${DEV_NAMESPACE} vanished`)
    await keep(apiFile, issued.key)
    return {
      apiKey: issued.key,
      adminKey,
      said: `keys: issued an API key of namespace ${DEV_NAMESPACE}, kept in ${apiFile}`,
    }
  } finally {
    await db.destroy()
  }
}

async function readKept(file: string): Promise<string | undefined> {
  try {
    const text = (await readFile(file, 'utf8')).trim()
    return text === '' ? undefined : text
  } catch {
    return undefined
  }
}

async function keep(file: string, key: string): Promise<string> {
  await writeFile(file, `${key}\n`, { mode: 0o600 })
  return key
}
