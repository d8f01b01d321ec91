// The cost of one database step of a submit-and-wait on this machine, with nothing else running:
// a one-row insert in autocommit (it answers after its WAL flush, under the server's own
// `synchronous_commit`, as every ledger write of Baton and of the hand-rolled service does) and a
// read of one row by key, each a named statement, one after another.
import pg from 'pg'
import { percentile } from './stats.ts'

export interface RoundTrips {
  readonly writeP50Ms: number
  readonly readP50Ms: number
}

export async function databaseRoundTrips(url: string, count: number): Promise<RoundTrips> {
  const client = new pg.Client({ connectionString: url, application_name: 'baton-bench-steps' })
  await client.connect()
  try {
    await client.query(
      'create table bench_round_trips (id bigint primary key, payload text not null)',
    )
    const writes: number[] = []
    const reads: number[] = []
    for (let i = 0; i < count; i += 1) {
      let t = performance.now()
      await client.query({
        name: 'bench-write',
        text: 'insert into bench_round_trips (id, payload) values ($1, $2)',
        values: [i, 'ok'],
      })
      writes.push(performance.now() - t)
      t = performance.now()
      await client.query({
        name: 'bench-read',
        text: 'select payload from bench_round_trips where id = $1',
        values: [i],
      })
      reads.push(performance.now() - t)
    }
    const sorted = (xs: number[]) => xs.sort((a, b) => a - b)
    await client.query('drop table bench_round_trips')
    return {
      writeP50Ms: percentile(sorted(writes), 50),
      readP50Ms: percentile(sorted(reads), 50),
    }
  } finally {
    await client.end()
  }
}
