// Where the ledger holds a copy of some bytes: the check behind "expired content is gone from
// everywhere", for tests of retention. Every table and column is found through the catalog, so a
// column added later is searched too.
import { sql } from 'kysely'
import type { Db } from '@baton/store'

/** Column types that can hold a copy of text or bytes. */
const SEARCHED_TYPES = ['text', 'varchar', 'bpchar', 'json', 'jsonb', 'bytea'] as const

/**
 * Every `table.column` of the current schema whose rows hold `content` — its bytes, or their
 * base64 at any of the three byte alignments (so a copy embedded from any offset is found) —
 * in any text, varchar, json, jsonb or bytea column of any table, found through the catalog.
 * Read-only; meant for tests' scratch ledgers (it reads every row of every such column).
 */
export async function ledgerCopiesOf(db: Db, content: Uint8Array): Promise<string[]> {
  const bytes = Buffer.from(content)
  // A text column cannot hold U+0000: content with it can only be copied as bytes or base64.
  const text = bytes.includes(0) ? undefined : bytes.toString('utf8')
  // A base64 run of `content` from offset k, less its last group (which depends on what follows).
  const base64 = [0, 1, 2]
    .map((k) => bytes.subarray(k).toString('base64').slice(0, -4))
    .filter((b) => b.length > 0)
  const columns = await sql<{ table_name: string; column_name: string; type_name: string }>`
    select c.relname as table_name, a.attname as column_name, t.typname as type_name
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
    join pg_type t on t.oid = a.atttypid
    where n.nspname = current_schema() and c.relkind in ('r', 'p') and not c.relispartition
      and a.attnum > 0 and not a.attisdropped
      and t.typname = any(${[...SEARCHED_TYPES]}::text[])
    order by 1, 2
  `.execute(db)
  const hits: string[] = []
  for (const { table_name, column_name, type_name } of columns.rows) {
    const column = sql.ref(`${table_name}.${column_name}`)
    const holds =
      type_name === 'bytea'
        ? sql`position(${bytes}::bytea in ${column}) > 0
              or ${sql.join(
                base64.map((b) => sql`position(convert_to(${b}, 'UTF8') in ${column}) > 0`),
                sql` or `,
              )}`
        : sql.join(
            [...(text === undefined ? [] : [text]), ...base64].map(
              (needle) => sql`strpos(${column}::text, ${needle}) > 0`,
            ),
            sql` or `,
          )
    const found = await sql<{ n: number }>`
      select count(*)::int as n from ${sql.table(table_name)} where ${holds}
    `.execute(db)
    if ((found.rows[0]?.n ?? 0) > 0) hits.push(`${table_name}.${column_name}`)
  }
  return hits
}
