import { sql, type Kysely } from 'kysely'

/**
 * A continuation's canonical input refers to an artifact instead of copying it.
 *
 * Until now admission copied an artifact's whole content, base64-encoded, into the stored input;
 * that copy outlived the artifact's retention. From here the input names the artifact by id, size
 * and digest (`{"artifactId","bytes","digest","kind":"artifact"}`, RFC 8785 key order) whatever
 * its state, so it never changes with expiry and holds no byte of the content. The content lives
 * in the artifact alone; a delivery (a claim, a held or an explicit consumption) resolves it,
 * verifies it against the digest the attempt's terminal fingerprint binds and checks its expiry
 * on the database clock (`loadDeliveredResults`).
 *
 * Rows admitted before this migration whose input holds the content (`"base64"`) are rewritten to
 * the reference form, whatever their state, and marked `input_embedded_content`. Their receipt and
 * `input_digest` are left exactly as admitted, so a retried admission still answers the first
 * receipt byte for byte and the digest stays as evidence. While the artifact's content lasts, a
 * delivery restores the input the receipt binds (the reference with the verified bytes in place of
 * the id, as admission wrote it); past expiry only the reference and the expiry summary remain,
 * and no copy of the bytes is left anywhere in the ledger.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table continuations add column input_embedded_content boolean not null default false;

    create or replace function baton_durable_input(p_attempt uuid) returns text
    language plpgsql stable as $f$
    declare
      a attempts;
      content text;
    begin
      select * into a from attempts where id = p_attempt;
      if not found or a.status <> 'terminal' or a.parent_run_id is null then
        return null;
      end if;
      -- The size and digest the terminal commit bound (its fingerprint covers them), not the
      -- artifact row's own copy.
      if a.artifact_id is not null then
        content := '{"artifactId":' || baton_json(a.artifact_id::text)
                   || ',"bytes":' || a.output_bytes::text
                   || ',"digest":' || baton_json(a.output_digest)
                   || ',"kind":"artifact"}';
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

    -- A JSON text cannot hold "base64": outside a member name (inside a string its quotes are
    -- escaped), so this finds exactly the inputs that embed an artifact's content.
    update continuations c
    set input = baton_durable_input(c.attempt_id), input_embedded_content = true
    from attempts a
    where a.id = c.attempt_id and a.artifact_id is not null
      and strpos(c.input, '"base64":') > 0;
  `.execute(db)
}
