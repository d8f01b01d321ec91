import { sql, type Kysely } from 'kysely'

/**
 * Results kept in full. An output above the inline bound (or one the inline preview cannot hold
 * exactly) is stored, by the terminal commit's own transaction, in an artifact: its bytes, preview,
 * byte size, digest and retention deadline. Expiry deletes the content (`content` null,
 * `expired_at` set) and keeps the rest as evidence. `namespace_usage` holds, per namespace, the
 * bytes of artifacts whose content has not been deleted: the commit locks that row to check and
 * raise it, expiry lowers it, so usage stays exact under any number of writers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table artifacts (
      id uuid primary key,
      namespace_id text not null,
      attempt_id uuid not null unique references attempts (id),
      content bytea,
      preview text not null,
      bytes bigint not null check (bytes >= 0),
      digest text not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      expired_at timestamptz,
      check ((content is null) = (expired_at is not null))
    );
    -- Content is already the payload a reader wants byte for byte: store it out of line, uncompressed.
    alter table artifacts alter column content set storage external;
    create index artifacts_due_idx on artifacts (expires_at) where expired_at is null;
    create index artifacts_namespace_live_idx on artifacts (namespace_id, expires_at)
      where expired_at is null;

    create table namespace_usage (
      namespace_id text primary key,
      artifact_bytes bigint not null default 0 check (artifact_bytes >= 0)
    );

    alter table attempts add column artifact_id uuid references artifacts (id);
  `.execute(db)
}
