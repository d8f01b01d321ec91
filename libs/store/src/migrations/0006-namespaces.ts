import { sql, type Kysely } from 'kysely'

/**
 * Tenants. A namespace owns its sessions, agents and attempts: session ids are unique per
 * namespace, and agents and attempts carry their namespace so that every read the API makes is
 * scoped by it with no join. API keys belong to one namespace and are stored only as the SHA-256
 * of the key (keys are random, so a fast hash is enough), with a short prefix to recognise them
 * in listings. Existing rows stay in the namespace they were written in (`default`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table namespaces add column description text;

    alter table agents add column namespace_id text;
    update agents ag set namespace_id = s.namespace_id from sessions s where s.id = ag.session_id;
    alter table agents alter column namespace_id set not null;

    alter table attempts add column namespace_id text;
    update attempts a set namespace_id = ag.namespace_id from agents ag where ag.id = a.agent_id;
    alter table attempts alter column namespace_id set not null;

    alter table agents drop constraint agents_session_id_fkey;
    alter table sessions drop constraint sessions_pkey;
    alter table sessions add primary key (namespace_id, id);
    alter table agents add constraint agents_session_fkey
      foreign key (namespace_id, session_id) references sessions (namespace_id, id);
    drop index agents_session_idx;
    create index agents_session_idx on agents (namespace_id, session_id);

    drop index attempts_idempotency_idx;
    create unique index attempts_idempotency_idx on attempts (namespace_id, session_id, idempotency_key)
      where idempotency_key is not null;

    create table api_keys (
      id uuid primary key,
      namespace_id text not null references namespaces (id),
      name text not null,
      prefix text not null,
      key_hash bytea not null unique,
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    );
    create index api_keys_namespace_idx on api_keys (namespace_id);
  `.execute(db)
}
