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

    -- A continuation's canonical input now carries the complete result: an output kept in an
    -- artifact is its exact bytes (base64: they may hold U+0000, which no text value can), or,
    -- once retention deleted them, a summary of what it was (size and digest). Members stay in
    -- RFC 8785 key order.
    create or replace function baton_durable_input(p_attempt uuid) returns text
    language plpgsql stable as $f$
    declare
      a attempts;
      art artifacts;
      content text;
    begin
      select * into a from attempts where id = p_attempt;
      if not found or a.status <> 'terminal' or a.parent_run_id is null then
        return null;
      end if;
      if a.artifact_id is not null then
        select * into art from artifacts where id = a.artifact_id;
        content := case when art.content is not null
          then '{"base64":' || baton_json(translate(encode(art.content, 'base64'), E'\n', ''))
               || ',"bytes":' || art.bytes::text || ',"digest":' || baton_json(art.digest)
               || ',"kind":"artifact"}'
          else '{"bytes":' || art.bytes::text || ',"digest":' || baton_json(art.digest)
               || ',"kind":"expired"}'
          end;
      elsif a.output_truncated then
        content := '{"bytes":' || a.output_bytes::text || ',"kind":"unavailable","preview":'
                   || baton_json(a.output_preview) || '}';
      else
        content := '{"kind":"inline","text":' || baton_json(a.output_preview) || '}';
      end if;
      return '{"cause":' || baton_continuation_cause(a)
        || ',"result":{"content":' || content
        || ',"failureCategory":' || baton_json(a.failure_category)
        || ',"stopReason":' || baton_json(a.stop_reason)
        || '}}';
    end
    $f$;
  `.execute(db)
}
