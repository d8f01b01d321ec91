import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { pendingMigrations, pingStore } from '@baton/store'
import type { ApiDeps } from '../deps.ts'

/** Liveness (the process answers) and readiness (Redis, Postgres, migrations current). */
export function healthRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }))
    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const checks = await Promise.allSettled([
        deps.redis.ping(),
        pingStore(deps.db),
        pendingMigrations(deps.db),
      ])
      const [redis, postgres, migrations] = checks
      const pending = migrations?.status === 'fulfilled' ? migrations.value : undefined
      const status = {
        redis: redis?.status === 'fulfilled' ? 'ok' : 'unreachable',
        postgres: postgres?.status === 'fulfilled' ? 'ok' : 'unreachable',
        migrations:
          pending === undefined
            ? 'unknown'
            : pending.length === 0
              ? 'current'
              : `pending: ${pending.join(', ')}`,
      }
      const ready =
        status.redis === 'ok' && status.postgres === 'ok' && status.migrations === 'current'
      return reply
        .status(ready ? 200 : 503)
        .send({ status: ready ? 'ready' : 'not_ready', checks: status })
    })
  }
}
