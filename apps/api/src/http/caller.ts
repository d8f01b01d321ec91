import type { FastifyRequest } from 'fastify'

/**
 * Who is calling: the namespace every read and write of a request is scoped by. Route handlers
 * ask `callerNamespace(request)` and pass the answer to the command service and the store; they
 * never read a namespace from the request body, path or query.
 */
export function callerNamespace(_request: FastifyRequest): string {
  return 'default'
}
