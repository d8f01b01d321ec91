import { describe, expect, test } from 'vitest'
import { refusedAddress, webhookDestinationPolicy, webhookUrlRefusal } from './webhook.ts'

const publicOnly = webhookDestinationPolicy({
  WEBHOOK_ALLOWED_HOSTS: '*',
  WEBHOOK_ALLOW_PRIVATE: 'false',
})

describe('the webhook destination policy', () => {
  test('private, loopback, link-local and unspecified addresses are refused, IPv4, IPv6 and IPv4-mapped alike; public ones pass', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
    ])
      expect(refusedAddress(address, publicOnly), address).toMatch(/private/)
    for (const address of ['93.184.216.34', '2606:2800:220:1::1', '::ffff:93.184.216.34'])
      expect(refusedAddress(address, publicOnly), address).toBeUndefined()
    const allowed = webhookDestinationPolicy({
      WEBHOOK_ALLOWED_HOSTS: '*',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    })
    expect(refusedAddress('127.0.0.1', allowed)).toBeUndefined()
  })

  test('a URL passes only with http(s), no credentials, a host on the allowlist and no literal private address', () => {
    expect(webhookUrlRefusal('https://hooks.example.com/x', publicOnly)).toBeUndefined()
    expect(webhookUrlRefusal('ftp://hooks.example.com/x', publicOnly)).toBe('not http or https')
    expect(webhookUrlRefusal('https://u:p@hooks.example.com/', publicOnly)).toBe(
      'credentials in the URL',
    )
    expect(webhookUrlRefusal('http://127.0.0.1:8080/', publicOnly)).toMatch(/private/)
    expect(webhookUrlRefusal('http://[::1]:8080/', publicOnly)).toMatch(/private/)
    expect(webhookUrlRefusal('http://[::ffff:7f00:1]/', publicOnly)).toMatch(/private/)
    const listed = webhookDestinationPolicy({
      WEBHOOK_ALLOWED_HOSTS: 'hooks.example.com, *.example.org',
      WEBHOOK_ALLOW_PRIVATE: 'false',
    })
    expect(webhookUrlRefusal('https://hooks.example.com/', listed)).toBeUndefined()
    expect(webhookUrlRefusal('https://a.b.example.org/', listed)).toBeUndefined()
    expect(webhookUrlRefusal('https://example.org/', listed)).toMatch(/allowlist/)
    expect(webhookUrlRefusal('https://evil-example.org/', listed)).toMatch(/allowlist/)
    expect(webhookUrlRefusal('https://other.example.com/', listed)).toMatch(/allowlist/)
  })
})
