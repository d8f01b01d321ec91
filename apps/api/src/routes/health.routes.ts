import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { pendingMigrations, pingStore } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import type { ApiTag } from '../http/openapi.ts'
import { answer } from '../http/route-answers.ts'

const tags: readonly ApiTag[] = ['Health']

/** Each dependency readiness looks at, and what it found. */
const checksSchema = z.object({
  redis: z.enum(['ok', 'unreachable']),
  postgres: z.enum(['ok', 'unreachable']),
  migrations: z.string().meta({ description: '`current`, `unknown`, or `pending: <names>`' }),
})

/** Liveness (the process answers) and readiness (Redis, Postgres, migrations current). */
export function healthRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          operationId: 'getLiveness',
          tags,
          summary: 'Liveness',
          description: 'Answers while the process runs. Needs no key.',
          security: [],
          response: { 200: answer('Alive', z.object({ status: z.literal('ok') })) },
        },
      },
      () => ({ status: 'ok' as const }),
    )
    const readiness = (status: 'ready' | 'not_ready') =>
      z.object({ status: z.literal(status), checks: checksSchema })
    app.get(
      '/readyz',
      {
        schema: {
          operationId: 'getReadiness',
          tags,
          summary: 'Readiness',
          description:
            'Ready when Redis and Postgres answer and the migrations are current; otherwise `503` ' +
            'with the failing checks. Needs no key.',
          security: [],
          response: {
            200: answer('Ready', readiness('ready')),
            503: answer('Not ready: the failing checks', readiness('not_ready')),
          },
        },
      },
      async (_request, reply) => {
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
        } as const
        const ready =
          status.redis === 'ok' && status.postgres === 'ok' && status.migrations === 'current'
        return reply
          .status(ready ? 200 : 503)
          .send({ status: ready ? 'ready' : 'not_ready', checks: status })
      },
    )
  }
}
