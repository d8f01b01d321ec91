// PgBouncer in transaction mode for the scripts that start a local cluster. Its one home is the
// test harness, whose `integration-pgbouncer` project runs the suites through it.
export { startPgBouncer } from '@baton/testing/pgbouncer'
export type { PgBouncer, PgBouncerOptions } from '@baton/testing/pgbouncer'
