import { describe, expect, it } from 'vitest'
import { commandCalls, postgresCpuTicks, redisProcessId, type PostgresSample } from './counters.ts'

describe('commandCalls', () => {
  it('sums the calls of every command line of INFO commandstats and ignores the rest', () => {
    const info = [
      '# Commandstats',
      'cmdstat_evalsha:calls=120,usec=3400,usec_per_call=28.33,rejected_calls=0,failed_calls=1',
      'cmdstat_client|setname:calls=4,usec=5,usec_per_call=1.25,rejected_calls=0,failed_calls=0',
      'cmdstat_info:calls=2,usec=90,usec_per_call=45.00,rejected_calls=0,failed_calls=0',
      'errorstat_ERR:count=7',
      '',
    ].join('\r\n')
    expect(commandCalls(info)).toBe(126)
  })

  it('is zero for a server that has answered nothing yet', () => {
    expect(commandCalls('# Commandstats\r\n')).toBe(0)
  })
})

describe('redisProcessId', () => {
  it('reads process_id from INFO server', () => {
    expect(
      redisProcessId('# Server\r\nredis_version:7.2.4\r\nprocess_id:4242\r\ntcp_port:6380\r\n'),
    ).toBe(4242)
  })

  it('refuses an answer without it', () => {
    expect(() => redisProcessId('# Server\r\n')).toThrow(/process_id/)
  })
})

describe('postgresCpuTicks', () => {
  const sample = (
    ticks: [number, number][],
    databaseOf: [number, string | null][],
  ): PostgresSample => ({ ticks: new Map(ticks), databaseOf: new Map(databaseOf) })

  it('charges the database its own backends and the server its shared processes, never another database', () => {
    const before = sample(
      [
        [1, 100], // postmaster: not in pg_stat_activity
        [2, 50], // WAL writer
        [10, 400], // a backend of the measured database
        [20, 9000], // a backend of another database
      ],
      [
        [2, null],
        [10, 'bench'],
        [20, 'other'],
      ],
    )
    const after = sample(
      [
        [1, 104],
        [2, 58],
        [10, 700],
        [11, 90], // connected to the measured database during the phase
        [20, 9900],
        [21, 500], // connected to another database during the phase
      ],
      [
        [2, null],
        [10, 'bench'],
        [11, 'bench'],
        [20, 'other'],
        [21, 'other'],
      ],
    )
    expect(postgresCpuTicks(before, after, 'bench')).toEqual({ own: 390, server: 12 })
  })

  it('loses only the last ticks of a backend that exited between the samples', () => {
    const before = sample([[10, 400]], [[10, 'bench']])
    const after = sample([], [])
    expect(postgresCpuTicks(before, after, 'bench')).toEqual({ own: 0, server: 0 })
  })
})
