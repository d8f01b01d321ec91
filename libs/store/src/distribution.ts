import { sql } from 'kysely'
import type { Db } from './db.ts'

/**
 * How the ledger shards (docs/architecture.md, "Ready to shard"). A session's rows hash to one
 * shard by their session id: each session-scoped table names its distribution column, and that
 * column is part of each of its primary, unique and foreign keys (0070), which is the rule a
 * sharding extension (Citus) enforces and the one a `PARTITION BY HASH` table enforces too.
 */
export const DISTRIBUTED_TABLES: Readonly<Record<string, string>> = {
  sessions: 'id',
  agents: 'session_id',
  attempts: 'session_id',
  attempt_transitions: 'session_id',
  attempt_messages: 'session_id',
  agent_context_events: 'session_id',
  runs: 'session_id',
  continuations: 'session_id',
  artifacts: 'session_id',
  artifact_uploads: 'session_id',
  artifact_chunks: 'session_id',
  webhook_deliveries: 'session_id',
  session_event_counters: 'session_id',
  session_events: 'session_id',
}

/**
 * The shared tables, copied whole to every shard: a namespace's configuration and counters, read
 * by statements of any session, and the migrator's own bookkeeping.
 */
export const REFERENCE_TABLES: readonly string[] = [
  'namespaces',
  'api_keys',
  'namespace_usage',
  'webhooks',
  'kysely_migration',
  'kysely_migration_lock',
]

/** How many hash partitions each distributed table gets in the hash-partitioned variant. */
const PARTITIONS = 4

export class DistributionKeyError extends Error {}

/**
 * Rebuilds every distributed table of a migrated ledger as `PARTITION BY HASH` on its
 * distribution column (with `PARTITIONS` partitions), in one transaction: the variant CI runs the
 * store suite against, so that a key without the distribution column fails there, as it would
 * under a sharding extension. Postgres refuses a primary or unique key of a partitioned table that
 * lacks the partition key and a foreign key to one that names no such key; this adds the rule
 * Postgres does not check (a foreign key between distributed tables pairs their distribution
 * columns) and that every table is either distributed or a reference table. Each table keeps its
 * columns, defaults, checks, indexes, triggers and rows; the functions whose signature names its
 * row type are recreated from their definitions. Throws `DistributionKeyError` naming the table,
 * key or index at fault.
 */
export async function partitionLedgerByHash(db: Db): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await checkEveryTableClassified(trx)
    await checkForeignKeyPairs(trx)
    const tables = Object.keys(DISTRIBUTED_TABLES)
    const foreignKeys = await sql<{ table: string; name: string; definition: string }>`
      select conrelid::regclass::text as table, conname as name,
             pg_get_constraintdef(oid) as definition
      from pg_constraint
      where contype = 'f' and (conrelid::regclass::text = any(${tables}::text[])
                               or confrelid::regclass::text = any(${tables}::text[]))
      order by conname
    `.execute(trx)
    for (const key of foreignKeys.rows) {
      await sql`alter table ${sql.table(key.table)} drop constraint ${sql.ref(key.name)}`.execute(
        trx,
      )
    }
    const functions = await sql<{ signature: string; definition: string }>`
      select distinct p.oid::regprocedure::text as signature, pg_get_functiondef(p.oid) as definition
      from pg_proc p join pg_depend d on d.objid = p.oid and d.classid = 'pg_proc'::regclass
      join pg_type t on t.oid = d.refobjid and d.refclassid = 'pg_type'::regclass
      where t.typrelid <> 0 and t.typrelid::regclass::text = any(${tables}::text[])
    `.execute(trx)
    for (const fn of functions.rows) await sql.raw(`drop function ${fn.signature}`).execute(trx)
    for (const [table, column] of Object.entries(DISTRIBUTED_TABLES)) {
      await partitionTable(trx, table, column)
    }
    for (const fn of functions.rows) await sql.raw(fn.definition).execute(trx)
    for (const key of foreignKeys.rows) {
      await sql
        .raw(`alter table ${key.table} add constraint ${key.name} ${key.definition}`)
        .execute(trx)
        .catch((error: unknown) => {
          throw new DistributionKeyError(
            `foreign key ${key.name} of ${key.table} names no key of a hash-partitioned table`,
            { cause: error },
          )
        })
    }
  })
}

async function partitionTable(db: Db, table: string, column: string): Promise<void> {
  const old = `${table}_unpartitioned`
  const options = await sql<{ reloptions: string[] | null }>`
    select reloptions from pg_class where oid = ${table}::regclass
  `.execute(db)
  const triggers = await sql<{ definition: string }>`
    select pg_get_triggerdef(oid) as definition from pg_trigger
    where tgrelid = ${table}::regclass and not tgisinternal
  `.execute(db)
  // Keys and indexes are recreated from their definitions, under their own names (statements and
  // error classification name some of them).
  const keys = await sql<{ name: string; definition: string }>`
    select conname as name, pg_get_constraintdef(oid) as definition from pg_constraint
    where conrelid = ${table}::regclass and contype in ('p', 'u')
  `.execute(db)
  const indexes = await sql<{ name: string; definition: string }>`
    select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i
    where i.indrelid = ${table}::regclass
      and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid
                                                     and c.conrelid = i.indrelid)
  `.execute(db)
  await sql`alter table ${sql.table(table)} rename to ${sql.table(old)}`.execute(db)
  await sql`
    create table ${sql.table(table)} (like ${sql.table(old)} including defaults including
      constraints including identity including generated including storage including comments)
    partition by hash (${sql.ref(column)})
  `.execute(db)
  const reloptions = options.rows[0]?.reloptions ?? []
  const storage = reloptions.length === 0 ? '' : ` with (${reloptions.join(', ')})`
  for (let remainder = 0; remainder < PARTITIONS; remainder += 1) {
    await sql
      .raw(
        `create table ${table}_p${remainder} partition of ${table}
         for values with (modulus ${PARTITIONS}, remainder ${remainder})${storage}`,
      )
      .execute(db)
  }
  await sql`
    insert into ${sql.table(table)} overriding system value select * from ${sql.table(old)}
  `.execute(db)
  await sql`drop table ${sql.table(old)}`.execute(db)
  const lacking = (name: string) => (error: unknown) => {
    throw new DistributionKeyError(
      `${table}: ${name} is unique without the distribution column ${column}`,
      { cause: error },
    )
  }
  for (const key of keys.rows) {
    await sql
      .raw(`alter table ${table} add constraint ${key.name} ${key.definition}`)
      .execute(db)
      .catch(lacking(key.name))
  }
  for (const index of indexes.rows) {
    await sql.raw(index.definition).execute(db).catch(lacking(index.name))
  }
  // The copied identity columns have sequences of their own: they continue after the rows.
  const identities = await sql<{ name: string }>`
    select attname as name from pg_attribute
    where attrelid = ${table}::regclass and attidentity <> ''
  `.execute(db)
  for (const { name } of identities.rows) {
    await sql`
      select setval(pg_get_serial_sequence(${table}::text, ${name}::text), max(${sql.ref(name)}))
      from ${sql.table(table)} having max(${sql.ref(name)}) is not null
    `.execute(db)
  }
  for (const trigger of triggers.rows) await sql.raw(trigger.definition).execute(db)
}

async function checkEveryTableClassified(db: Db): Promise<void> {
  const known = [...Object.keys(DISTRIBUTED_TABLES), ...REFERENCE_TABLES]
  const tables = await sql<{ name: string }>`
    select relname as name from pg_class
    where relnamespace = 'public'::regnamespace and relkind in ('r', 'p') and not relispartition
      and relname <> all(${known}::text[])
    order by relname
  `.execute(db)
  if (tables.rows.length > 0) {
    throw new DistributionKeyError(
      `tables neither distributed nor reference (add each to DISTRIBUTED_TABLES or ` +
        `REFERENCE_TABLES): ${tables.rows.map((r) => r.name).join(', ')}`,
    )
  }
}

/**
 * A foreign key between two distributed tables must pair the referencing table's distribution
 * column with the referenced table's: only then do both rows live on one shard.
 */
async function checkForeignKeyPairs(db: Db): Promise<void> {
  const keys = await sql<{
    name: string
    table: string
    referenced: string
    columns: string[]
    referenced_columns: string[]
  }>`
    select c.conname as name, c.conrelid::regclass::text as table,
           c.confrelid::regclass::text as referenced,
           array(select a.attname::text from unnest(c.conkey) with ordinality k(n, i)
                 join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n
                 order by k.i) as columns,
           array(select a.attname::text from unnest(c.confkey) with ordinality k(n, i)
                 join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.n
                 order by k.i) as referenced_columns
    from pg_constraint c
    where c.contype = 'f'
      and c.conrelid::regclass::text = any(${Object.keys(DISTRIBUTED_TABLES)}::text[])
      and c.confrelid::regclass::text = any(${Object.keys(DISTRIBUTED_TABLES)}::text[])
  `.execute(db)
  for (const key of keys.rows) {
    const at = key.columns.indexOf(DISTRIBUTED_TABLES[key.table] ?? '')
    if (at < 0 || key.referenced_columns[at] !== DISTRIBUTED_TABLES[key.referenced]) {
      throw new DistributionKeyError(
        `foreign key ${key.name} of ${key.table} does not pair the distribution columns of ` +
          `${key.table} and ${key.referenced}`,
      )
    }
  }
}
