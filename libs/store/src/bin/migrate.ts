// `npm run migrate`: bring the database named by DATABASE_URL to the latest schema.
import { createDb } from '../db.ts'
import { migrateToLatest } from '../migrate.ts'

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/baton'
// Nothing prepared: a run is one transaction, and named statements would outlive it on a pooled
// server connection (PgBouncer in transaction mode), where the next run could meet them.
const db = createDb({
  connectionString: url,
  maxConnections: 2,
  applicationName: 'baton-migrate',
  preparedStatements: false,
})
try {
  const report = await migrateToLatest(db)
  console.log(
    report.applied.length === 0 ? 'schema is current' : `applied: ${report.applied.join(', ')}`,
  )
} finally {
  await db.destroy()
}
