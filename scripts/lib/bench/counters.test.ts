import { describe, expect, it } from 'vitest'
import { commandCalls, redisProcessId } from './counters.ts'

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
