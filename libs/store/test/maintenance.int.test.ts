import { sql } from 'kysely'
import { describe, expect, test } from '@baton/testing'
import { ledgerMaintenanceGaps } from '../src/maintenance.ts'

describe('ledgerMaintenanceGaps', () => {
  test("names the server's autovacuum as it is, and a table-level switch on attempts", async ({
    db,
  }) => {
    const server = await sql<{ autovacuum: string }>`
      select current_setting('autovacuum') as autovacuum
    `.execute(db)
    const serverGaps =
      server.rows[0]?.autovacuum === 'on' ? [] : ['autovacuum is off on the Postgres server']
    expect(await ledgerMaintenanceGaps(db)).toEqual(serverGaps)

    await sql`alter table attempts set (autovacuum_enabled = false)`.execute(db)
    try {
      expect(await ledgerMaintenanceGaps(db)).toEqual([
        ...serverGaps,
        'autovacuum is disabled on the attempts table (autovacuum_enabled=false)',
      ])
    } finally {
      await sql`alter table attempts reset (autovacuum_enabled)`.execute(db)
    }
    expect(await ledgerMaintenanceGaps(db)).toEqual(serverGaps)
  })
})
