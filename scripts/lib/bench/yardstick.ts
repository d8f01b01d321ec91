// What the bench's yardstick services (the hand-rolled service and the queue floor) share: their
// settings, their HTTP app and the body its one route accepts, and the no-op child both workers run.
import Fastify, { type FastifyInstance } from 'fastify'
import { ErrorCode } from '@baton/contracts'

/** The settings every yardstick process reads from its environment. */
export function queueServiceSettings(env: NodeJS.ProcessEnv): {
  redisUrl: string
  queuePrefix: string
  port: number
  concurrency: number
} {
  return {
    redisUrl: requiredSetting(env, 'REDIS_URL'),
    queuePrefix: requiredSetting(env, 'QUEUE_PREFIX'),
    port: Number(env.PORT ?? '0'),
    concurrency: Number(env.WORKER_CONCURRENCY ?? '100'),
  }
}

export function requiredSetting(env: NodeJS.ProcessEnv, key: string): string {
  const value = env[key]
  if (value === undefined || value === '') throw new Error(`set ${key} for the bench's service`)
  return value
}

/** The body of `POST /v1/sessions/:sessionId/delegations` as the bench sends it (Fastify schema). */
export const DELEGATION_BODY_SCHEMA = {
  type: 'object',
  required: ['name', 'prompt'],
  properties: {
    name: { type: 'string', minLength: 1 },
    prompt: {},
    wait: {
      type: 'object',
      required: ['timeoutMs'],
      properties: { timeoutMs: { type: 'integer', minimum: 0, maximum: 600000 } },
    },
  },
} as const

export interface DelegationBody {
  name: string
  prompt: unknown
  wait?: { timeoutMs: number }
}

/** The same no-op child as the bench's `scripted` prompt: answer the script's `output`. */
export function noopChildOutput(prompt: unknown): string {
  if (typeof prompt !== 'string') return JSON.stringify(prompt)
  try {
    const script = JSON.parse(prompt) as { output?: unknown }
    return typeof script.output === 'string' ? script.output : prompt
  } catch {
    return prompt
  }
}

/** Fastify that answers a refused request with Baton's error body, as Baton's API does. */
export function createYardstickApp(): FastifyInstance {
  const app = Fastify({ logger: { level: 'warn' } })
  app.setErrorHandler((error: { statusCode?: number; message: string }, _request, reply) => {
    const status = error.statusCode ?? 500
    void reply.status(status).send({
      error: {
        code: status < 500 ? ErrorCode.ValidationFailed : ErrorCode.Internal,
        message: error.message,
      },
    })
  })
  return app
}
