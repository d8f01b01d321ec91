import { defineConfig } from 'vitest/config'

// Every API and worker suite runs a second time with the apps behind PgBouncer in transaction
// mode (see the project below): the ledger's claims, fenced commits, heartbeats and lease loss,
// cancels, steering, bounded waits, continuations, hosted runs, artifacts, faults, retention and
// shutdown, all through the pooler.
const PGBOUNCER_SUITES = ['apps/{api,worker}/test/**/*.int.test.ts']

// One vitest process for the whole repo. Pure tests (`*.test.ts`, beside their module) and
// integration tests against real Redis and Postgres (`*.int.test.ts`, in each package's `test/`)
// are separate projects; the integration project gets
// its services from REDIS_URL/DATABASE_URL, or from testcontainers where Docker exists.
export default defineConfig({
  test: {
    reporters: ['default', './libs/testing/src/summary-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{apps,libs}/*/{src,test}/**/*.test.ts', 'scripts/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['{apps,libs}/*/{src,test}/**/*.int.test.ts', 'scripts/**/*.int.test.ts'],
          globalSetup: ['libs/testing/src/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        // API and worker suites again, with the apps behind PgBouncer in transaction mode and
        // DB_PREPARED_STATEMENTS=false, as docs/operations.md has an operator run them; databases
        // are still created, cloned and migrated directly.
        test: {
          name: 'integration-pgbouncer',
          include: PGBOUNCER_SUITES,
          globalSetup: ['libs/testing/src/pgbouncer-global-setup.ts'],
          env: { DB_PREPARED_STATEMENTS: 'false' },
          // After the direct integration run, not beside it: each project runs one file at a time.
          sequence: { groupOrder: 1 },
          testTimeout: 30_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        // The store suite against the ledger with every distributed table hash-partitioned on its
        // distribution column: a key without it fails here as under a sharding extension. Less the
        // files that assert the unpartitioned tables' own plans and storage settings.
        test: {
          name: 'store-hash-partitioned',
          include: ['libs/store/test/**/*.int.test.ts'],
          exclude: [
            'libs/store/test/attempts/plans.int.test.ts',
            'libs/store/test/maintenance.int.test.ts',
          ],
          globalSetup: ['libs/testing/src/global-setup-hash-partitioned.ts'],
          // After the PgBouncer run: one integration project at a time.
          sequence: { groupOrder: 2 },
          testTimeout: 30_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
    ],
  },
})
