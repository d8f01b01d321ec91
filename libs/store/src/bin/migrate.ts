// `npm run migrate`: bring the database named by DATABASE_URL to the latest schema.
import { createDb } from '../db.ts'
import { migrateToLatest } from '../migrate.ts'

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/baton'
const db = createDb({ connectionString: url, maxConnections: 2, applicationName: 'baton-migrate' })
try {
  const report = await migrateToLatest(db)
  console.log(
    report.applied.length === 0 ? 'schema is current' : `applied: ${report.applied.join(', ')}`,
  )
} finally {
  await db.destroy()
}
