import { sql } from 'kysely'
import { resultDigest, terminalFingerprint } from '@baton/contracts'
import type { Db } from '../db.ts'
import { readArtifactContent } from './load-artifact.ts'
import { collectOrphanUploads } from './stage-artifact.ts'
import {
  STORED_ARTIFACT_TERMINAL_COLUMNS,
  storedArtifactProjection,
  type StoredArtifactTerminal,
} from '../attempts/terminal-record.ts'

export interface ExpiryReport {
  /** Artifacts whose content this batch deleted. */
  readonly expired: number
  /** Attempts that had no fingerprint and got one from their still-complete projection. */
  readonly backfilled: number
  /** Uploads no commit bound within `UPLOAD_GRACE_MS`, deleted with their chunks. */
  readonly discarded: number
}

interface DueArtifact {
  readonly id: string
  readonly namespace_id: string
  readonly bytes: string
  readonly attempt_id: string
  readonly has_fingerprint: boolean
}

/**
 * One retention batch: deletes the content of artifacts whose deadline passed on the database
 * clock, keeping the artifact row (digest, size, deadline) and the attempt's terminal record and
 * fingerprint, and frees the bytes in each namespace's usage.
 * Inputs: the batch size. Artifacts are taken with `FOR UPDATE SKIP LOCKED`, so any number of
 * runners take disjoint batches and none frees bytes twice; usage rows are then locked in
 * namespace order (no deadlock between runners; a commit locks one usage row and never waits on
 * an artifact row). An attempt without a fingerprint gets one first, computed from its terminal
 * projection while that is still complete (content present and matching its digest); expired
 * evidence without one stays without, so a replay of it is refused.
 * Expiry deletes the artifact's chunks with it. Before the batch, uploads no commit bound are
 * collected (`collectOrphanUploads`).
 * Outcome: how many were expired, backfilled and discarded. Retry safety: a repeat finds nothing
 * due twice.
 */
export async function expireArtifacts(
  db: Db,
  input: { readonly limit: number },
): Promise<ExpiryReport> {
  const discarded = await db
    .transaction()
    .execute((trx) => collectOrphanUploads(trx, { limit: input.limit }))
  const report = await db.transaction().execute(async (trx) => {
    const due = await sql<DueArtifact>`
      select ar.id, ar.namespace_id, ar.bytes, ar.attempt_id, a.fingerprint is not null as has_fingerprint
      from artifacts ar join attempts a on a.id = ar.attempt_id
      where ar.expired_at is null and ar.expires_at <= now()
      order by ar.expires_at
      limit ${input.limit}
      for update of ar skip locked
    `.execute(trx)
    if (due.rows.length === 0) return { expired: 0, backfilled: 0, discarded: 0 }
    const backfilled = await backfillFingerprints(
      trx,
      due.rows.filter((r) => !r.has_fingerprint).map((r) => r.attempt_id),
    )
    const namespaces = [...new Set(due.rows.map((r) => r.namespace_id))].sort()
    await sql`
      select namespace_id from namespace_usage where namespace_id = any(${namespaces}::text[])
      order by namespace_id for update
    `.execute(trx)
    await sql`
      with freed as (
        update artifacts set expired_at = now()
        where id = any(${due.rows.map((r) => r.id)}::uuid[]) and expired_at is null
        returning namespace_id, bytes, upload_id
      ), chunks as (
        delete from artifact_chunks c using freed where c.upload_id = freed.upload_id
      ), per as (select namespace_id, sum(bytes) as bytes from freed group by namespace_id)
      update namespace_usage u set artifact_bytes = u.artifact_bytes - per.bytes
      from per where u.namespace_id = per.namespace_id
    `.execute(trx)
    return { expired: due.rows.length, backfilled }
  })
  return { ...report, discarded }
}

interface ProjectionRow extends StoredArtifactTerminal {
  readonly namespace_id: string
}

/**
 * Sets the fingerprint of terminal attempts that have none, from their complete projection: the
 * attempt's terminal fields and its artifact's binding, whose content must still be present and
 * match its digest (otherwise the evidence is not complete and nothing is written).
 */
async function backfillFingerprints(trx: Db, attemptIds: readonly string[]): Promise<number> {
  if (attemptIds.length === 0) return 0
  const rows = await sql<ProjectionRow>`
    select ${STORED_ARTIFACT_TERMINAL_COLUMNS}, ar.namespace_id
    from attempts a join artifacts ar on ar.id = a.artifact_id
    where a.id = any(${attemptIds}::uuid[]) and a.status = 'terminal' and a.fingerprint is null
      and ar.upload_id is not null
  `.execute(trx)
  const complete: ProjectionRow[] = []
  for (const row of rows.rows) {
    const content = await readArtifactContent(trx, row.artifact_id)
    if (content !== undefined && resultDigest(content) === row.artifact_digest) complete.push(row)
  }
  if (complete.length === 0) return 0
  const result = await sql`
    update attempts a set fingerprint = f.fingerprint
    from unnest(${complete.map((r) => r.id)}::uuid[], ${complete.map(fingerprintOf)}::text[])
      as f(id, fingerprint)
    where a.id = f.id and a.fingerprint is null
  `.execute(trx)
  return Number(result.numAffectedRows ?? 0)
}

function fingerprintOf(row: ProjectionRow): string {
  return terminalFingerprint(storedArtifactProjection(row))
}
