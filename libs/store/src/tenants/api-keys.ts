import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db.ts'

/**
 * Namespaces and their API keys. A key is 32 random bytes (256 bits) in base64url behind a
 * recognisable `bk_` tag; the ledger keeps only its SHA-256 (a key is random, so a fast hash is
 * as strong as a slow one) and its first characters, so a listing can show which key is which
 * without ever being able to show the key again.
 */
const KEY_TAG = 'bk_'
/** How much of a key a listing shows: the tag and 8 characters (48 bits, never enough to use). */
const PREFIX_CHARS = KEY_TAG.length + 8

export interface NamespaceRecord {
  readonly namespaceId: string
  readonly description: string | null
  readonly createdAt: Date
}

export interface ApiKeyRecord {
  readonly keyId: string
  readonly namespaceId: string
  readonly name: string
  readonly prefix: string
  readonly createdAt: Date
  readonly revokedAt: Date | null
}

/** A key as issued: the only moment its secret exists outside the caller's hands. */
export interface IssuedApiKey extends ApiKeyRecord {
  readonly key: string
}

/** The SHA-256 of a key, as the ledger stores and looks it up. */
export function apiKeyHash(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest()
}

/** Whether `text` has the shape of a Baton API key (cheap, before any lookup). */
export function looksLikeApiKey(text: string): boolean {
  return /^bk_[A-Za-z0-9_-]{43}$/.test(text)
}

export async function createNamespace(
  db: Db,
  input: { readonly namespaceId: string; readonly description: string | null },
): Promise<
  { readonly kind: 'created'; readonly namespace: NamespaceRecord } | { readonly kind: 'exists' }
> {
  const row = await db
    .insertInto('namespaces')
    .values({ id: input.namespaceId, description: input.description })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning(['id', 'description', 'created_at'])
    .executeTakeFirst()
  if (row === undefined) return { kind: 'exists' }
  return { kind: 'created', namespace: toNamespace(row) }
}

export async function listNamespaces(db: Db): Promise<NamespaceRecord[]> {
  const rows = await db
    .selectFrom('namespaces')
    .select(['id', 'description', 'created_at'])
    .orderBy('id')
    .execute()
  return rows.map(toNamespace)
}

/** Issues a new key for an existing namespace; `undefined` when there is no such namespace. */
export async function issueApiKey(
  db: Db,
  input: { readonly namespaceId: string; readonly name: string },
): Promise<IssuedApiKey | undefined> {
  const key = `${KEY_TAG}${randomBytes(32).toString('base64url')}`
  const row = await sql<KeyRow>`
    insert into api_keys (id, namespace_id, name, prefix, key_hash)
    select ${randomUUID()}::uuid, n.id, ${input.name}, ${key.slice(0, PREFIX_CHARS)},
           ${apiKeyHash(key)}
    from namespaces n where n.id = ${input.namespaceId}
    returning id, namespace_id, name, prefix, created_at, revoked_at
  `.execute(db)
  const issued = row.rows[0]
  return issued === undefined ? undefined : { ...toKey(issued), key }
}

/**
 * The keys of a namespace, newest first, revoked ones included (with when); `undefined` when
 * there is no such namespace.
 */
export async function listApiKeys(
  db: Db,
  namespaceId: string,
): Promise<ApiKeyRecord[] | undefined> {
  const result = await sql<Omit<KeyRow, 'id'> & { id: string | null }>`
    select k.id, n.id as namespace_id, k.name, k.prefix, k.created_at, k.revoked_at
    from namespaces n left join api_keys k on k.namespace_id = n.id
    where n.id = ${namespaceId}
    order by k.created_at desc, k.id
  `.execute(db)
  if (result.rows.length === 0) return undefined
  return result.rows.flatMap(({ id, ...row }) => (id === null ? [] : [toKey({ ...row, id })]))
}

/**
 * Revokes a key. Idempotent: revoking a revoked key keeps its first revocation time.
 * `undefined` when no such key exists.
 */
export async function revokeApiKey(db: Db, keyId: string): Promise<ApiKeyRecord | undefined> {
  const row = await sql<KeyRow>`
    update api_keys set revoked_at = coalesce(revoked_at, now())
    where id = ${keyId}::uuid
    returning id, namespace_id, name, prefix, created_at, revoked_at
  `.execute(db)
  const revoked = row.rows[0]
  return revoked === undefined ? undefined : toKey(revoked)
}

/** The live (unrevoked) key with this secret, or `undefined`. */
export async function findLiveApiKey(
  db: Db,
  key: string,
): Promise<{ readonly keyId: string; readonly namespaceId: string } | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'namespace_id'])
    .where('key_hash', '=', apiKeyHash(key))
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return row === undefined ? undefined : { keyId: row.id, namespaceId: row.namespace_id }
}

interface KeyRow {
  id: string
  namespace_id: string
  name: string
  prefix: string
  created_at: Date
  revoked_at: Date | null
}

function toKey(row: KeyRow): ApiKeyRecord {
  return {
    keyId: row.id,
    namespaceId: row.namespace_id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  }
}

function toNamespace(row: {
  id: string
  description: string | null
  created_at: Date
}): NamespaceRecord {
  return { namespaceId: row.id, description: row.description, createdAt: row.created_at }
}
