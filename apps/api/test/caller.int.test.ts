import { createDb, revokeApiKey } from '@baton/store'
import { expect, tenantKey, test } from '@baton/testing'
import { createKeyResolver } from '../src/http/caller.ts'

test('requests that miss the key cache at once share one read, and a revocation is not cached over', async ({
  databaseUrl,
  db,
}) => {
  const key = await tenantKey(db, 'tenant-keys')
  let reads = 0
  const counted = createDb({
    connectionString: databaseUrl,
    maxConnections: 4,
    onQuery: (text) => (text.includes('from "api_keys"') ? (reads += 1) : undefined),
  })
  try {
    const keys = createKeyResolver(counted, 60_000)
    const answers = await Promise.all(Array.from({ length: 20 }, () => keys.resolve(key)))
    expect(reads).toBe(1)
    expect(new Set(answers.map((a) => a?.namespaceId))).toEqual(new Set(['tenant-keys']))
    await keys.resolve(key)
    expect(reads).toBe(1)

    // Unknown keys are never cached, but concurrent ones still share their read.
    const unknown = `bk_${'x'.repeat(43)}`
    expect(await Promise.all([keys.resolve(unknown), keys.resolve(unknown)])).toEqual([
      undefined,
      undefined,
    ])
    expect(reads).toBe(2)

    // Revoked here while a read is in flight: the read answers, but nothing is cached from it,
    // and a request after the revocation reads again (and finds the key revoked).
    const keyId = answers[0]!.keyId
    const uncached = createKeyResolver(counted, 60_000)
    const inFlight = uncached.resolve(key)
    await revokeApiKey(db, keyId)
    uncached.forget(keyId)
    const after = uncached.resolve(key)
    expect(await after).toBeUndefined()
    await inFlight
    expect(await uncached.resolve(key)).toBeUndefined()
    expect(reads).toBe(5)
  } finally {
    await counted.destroy()
  }
})
