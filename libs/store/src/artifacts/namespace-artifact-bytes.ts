import { sql } from 'kysely'
import type { Db } from '../db.ts'

/**
 * Artifact bytes each namespace holds now (its quota usage, `namespace_usage`): one row per
 * namespace that ever stored an artifact. Read-only; for metrics at scrape time.
 */
export async function namespaceArtifactBytes(
  db: Db,
): Promise<{ namespaceId: string; bytes: number }[]> {
  const result = await sql<{ namespace_id: string; bytes: string }>`
    select namespace_id, artifact_bytes as bytes from namespace_usage order by namespace_id
  `.execute(db)
  return result.rows.map((r) => ({ namespaceId: r.namespace_id, bytes: Number(r.bytes) }))
}
