import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'

export const METRICS_PATH = '/metrics'

export interface MetricsServer {
  /** `http://host:port` it listens on. */
  readonly url: string
  close(): Promise<void>
}

/**
 * A bare HTTP server for processes without one of their own (workers): `GET /metrics` answers the
 * registry's text exposition, anything else 404. No authentication: bind it to an address only
 * the scraper reaches.
 */
export async function startMetricsServer(options: {
  readonly registry: Registry
  readonly host: string
  readonly port: number
}): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]
    if (path !== METRICS_PATH || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n')
      return
    }
    options.registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': options.registry.contentType })
        response.end(request.method === 'HEAD' ? undefined : text)
      },
      () => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
        response.end('metrics unavailable\n')
      },
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)))
        server.closeAllConnections()
      }),
  }
}
