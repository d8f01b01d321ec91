import { createNamespace, issueApiKey, type Db } from '@baton/store'

/** A new API key of `namespaceId` (created if it does not exist), issued straight in the ledger. */
export async function tenantKey(db: Db, namespaceId: string): Promise<string> {
  await createNamespace(db, { namespaceId, description: null })
  const issued = await issueApiKey(db, { namespaceId, name: 'test' })
  if (issued === undefined) throw new Error(`namespace ${namespaceId} vanished`)
  return issued.key
}
