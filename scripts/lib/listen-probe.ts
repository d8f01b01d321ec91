import net from 'node:net'

/**
 * Binds `host:port` and lets go at once: resolves with the port (a free one for port 0), rejects
 * with the listen error (EADDRINUSE) when it is taken.
 */
export function listenProbe(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address()
      const bound = typeof address === 'object' && address !== null ? address.port : port
      server.close(() => resolve(bound))
    })
  })
}
