import { sql } from 'kysely'
import type { Db } from '../db.ts'
import type { ResultPolicy } from './result-policy.ts'

/**
 * Reserves `bytes` of a namespace's artifact quota inside the caller's commit transaction.
 * Inputs: namespace, bytes, the namespace limit. First statement: create-or-lock the namespace's
 * usage row, so every commit and every expiry of the namespace serialises on it. Second (a fresh
 * snapshot, taken while holding the lock): live usage is the row's bytes minus those of artifacts
 * already due at the database's `now()` but not yet freed by expiry, and the reservation applies
 * only if live usage plus `bytes` stays within the limit.
 * Outcome: true when reserved (the row was raised by `bytes`), false when over quota (no change).
 * Retry safety: the caller's transaction is the unit; a rolled-back reservation never happened.
 */
export async function reserveArtifactBytes(
  trx: Db,
  namespaceId: string,
  bytes: number,
  policy: Pick<ResultPolicy, 'namespaceMaxBytes'>,
): Promise<boolean> {
  await sql`
    insert into namespace_usage (namespace_id) values (${namespaceId})
    on conflict (namespace_id) do update set artifact_bytes = namespace_usage.artifact_bytes
  `.execute(trx)
  const reserved = await sql<{ namespace_id: string }>`
    update namespace_usage u
    set artifact_bytes = u.artifact_bytes + ${bytes}::bigint
    where u.namespace_id = ${namespaceId}
      and u.artifact_bytes + ${bytes}::bigint - (
        select coalesce(sum(ar.bytes), 0) from artifacts ar
        where ar.namespace_id = ${namespaceId} and ar.expired_at is null and ar.expires_at <= now()
      ) <= ${policy.namespaceMaxBytes}::bigint
    returning u.namespace_id
  `.execute(trx)
  return reserved.rows.length === 1
}
