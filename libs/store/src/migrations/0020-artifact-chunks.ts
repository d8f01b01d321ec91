import { sql, type Kysely } from 'kysely'

/**
 * Artifact content in chunks, written before the terminal commit.
 *
 * Until now a terminal commit inserted an artifact's whole content in its own transaction, while
 * holding its namespace's usage row: a large output's bytes were sent, stored and hashed under
 * that lock, and every read of an artifact (even a one-byte range) read all of it. From here:
 *
 * - `artifact_uploads`: content written ahead of its commit (`stageArtifact`), by a worker, in
 *   short transactions of its own, outside any namespace lock: its attempt, size, digest and
 *   chunk count. The commit that binds it deletes the upload row in its transaction;
 *   an upload no commit bound (refused, replayed, a stale owner, a crash) is deleted with its
 *   chunks by the reconciler once it is older than the grace period (`artifact_uploads_created_idx`).
 * - `artifact_chunks`: the content, `ARTIFACT_CHUNK_BYTES` per row, keyed by upload and position;
 *   each with its digest (`chunkDigest`: domain, position and bytes), so a range read verifies
 *   the chunks it reads without reading the rest.
 * - `artifacts.upload_id` names the chunks of an artifact, `chunk_bytes` their size; the content
 *   column goes. Expiry deletes the chunks and keeps the row (digest, size, deadline).
 *
 * Content stored before this migration moves into chunks (its upload id is the artifact's id),
 * with the digests computed here exactly as `chunkDigest` does.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table artifact_uploads (
      id uuid primary key,
      attempt_id uuid not null,
      bytes bigint not null check (bytes >= 0),
      digest text not null,
      chunks int not null check (chunks >= 0),
      created_at timestamptz not null default now()
    );
    create index artifact_uploads_created_idx on artifact_uploads (created_at);

    create table artifact_chunks (
      upload_id uuid not null,
      seq int not null check (seq >= 0),
      content bytea not null,
      digest text not null,
      primary key (upload_id, seq)
    );
    -- Already the payload a reader wants byte for byte: out of line, uncompressed.
    alter table artifact_chunks alter column content set storage external;

    alter table artifacts add column upload_id uuid, add column chunk_bytes int;

    insert into artifact_chunks (upload_id, seq, content, digest)
    select ar.id, s.seq, s.content,
           'baton.chunk.v1:sha256:' || encode(sha256(
             convert_to('baton.chunk.v1', 'UTF8') || '\\x00'::bytea
             || convert_to(s.seq::text, 'UTF8') || '\\x00'::bytea || s.content), 'hex')
    from artifacts ar
    cross join lateral (
      select g.seq, substring(ar.content from g.seq * 1048576 + 1 for 1048576) as content
      from generate_series(0, greatest(ceil(octet_length(ar.content) / 1048576.0)::int - 1, 0))
        as g(seq)
    ) s
    where ar.content is not null;
    update artifacts set upload_id = id, chunk_bytes = 1048576 where content is not null;

    alter table artifacts drop constraint if exists artifacts_check;
    alter table artifacts drop column content;
    alter table artifacts add constraint artifacts_content_check
      check (expired_at is not null or (upload_id is not null and chunk_bytes > 0));
  `.execute(db)
}
