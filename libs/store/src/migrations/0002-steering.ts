import { sql, type Kysely } from 'kysely'

/**
 * Steering messages: recorded in the ledger with a per-attempt sequence before anyone is told, and
 * marked delivered once the owning worker handed them to the run. `steer_sequence` on the attempt
 * row hands out sequence numbers under the row lock, so concurrent steers never collide.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table attempts add column steer_sequence integer not null default 0;

    create table attempt_messages (
      attempt_id uuid not null references attempts (id),
      sequence integer not null,
      content jsonb not null,
      created_at timestamptz not null default now(),
      delivered_at timestamptz,
      primary key (attempt_id, sequence)
    );
    create index attempt_messages_undelivered_idx on attempt_messages (attempt_id)
      where delivered_at is null;
  `.execute(db)
}
