// infra/docker-compose.yml is how users run Baton on their own machines, and no Docker engine runs
// here: so the file is read with a real YAML parser and checked against what the apps read.
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { describe, expect, it } from 'vitest'
import { API_CONFIG_VARIABLES, loadConfig as loadApiConfig } from '../apps/api/src/config.ts'
import {
  WORKER_CONFIG_VARIABLES,
  loadConfig as loadWorkerConfig,
} from '../apps/worker/src/config.ts'

interface ComposeService {
  command?: string[]
  environment?: Record<string, string>
  ports?: string[]
  container_name?: string
  healthcheck?: { test: unknown }
  depends_on?: Record<string, { condition: string }>
  deploy?: { replicas?: number }
}

const compose = parse(
  readFileSync(new URL('../infra/docker-compose.yml', import.meta.url), 'utf8'),
  { merge: true },
) as { services: Record<string, ComposeService> }

function service(name: string): ComposeService {
  const found = compose.services[name]
  if (found === undefined) throw new Error(`no service ${name}`)
  return found
}

describe('infra/docker-compose.yml', () => {
  it('runs Redis, Postgres, a one-shot migration, the API and a scalable worker, with health checks', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ['api', 'migrate', 'postgres', 'redis', 'worker'].sort(),
    )
    for (const name of ['redis', 'postgres', 'api']) expect(service(name).healthcheck).toBeDefined()
    expect(service('migrate').command).toEqual(['node', 'libs/store/src/bin/migrate.ts'])
    expect(service('api').command).toEqual(['node', 'apps/api/src/main.ts'])
    expect(service('worker').command).toEqual(['node', 'apps/worker/src/main.ts'])
    // `--scale worker=N` needs a worker with no fixed name and no published port.
    expect(service('worker').container_name).toBeUndefined()
    expect(service('worker').ports).toBeUndefined()
    expect(service('worker').deploy?.replicas).toBeGreaterThanOrEqual(1)
  })

  it('starts the migration after Postgres is healthy, and the apps after Redis and the migration', () => {
    expect(service('migrate').depends_on).toEqual({ postgres: { condition: 'service_healthy' } })
    for (const name of ['api', 'worker']) {
      expect(service(name).depends_on).toEqual({
        redis: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      })
    }
  })

  it('sets only variables the apps read, with values they accept, pointing at the compose services', () => {
    // Compose fills `${VAR:-default}` from the shell; with VAR unset, the default is the value.
    const interpolated = (env: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(env).map(([k, v]) => [k, v.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')]),
      )
    const api = interpolated(service('api').environment ?? {})
    const worker = interpolated(service('worker').environment ?? {})
    for (const key of Object.keys(api)) expect(API_CONFIG_VARIABLES).toContain(key)
    for (const key of Object.keys(worker)) expect(WORKER_CONFIG_VARIABLES).toContain(key)
    for (const key of Object.keys(service('migrate').environment ?? {}))
      expect([...API_CONFIG_VARIABLES, ...WORKER_CONFIG_VARIABLES]).toContain(key)

    const apiConfig = loadApiConfig(api)
    const workerConfig = loadWorkerConfig(worker)
    expect(apiConfig.host).toBe('0.0.0.0')
    expect(service('api').ports?.[0]).toMatch(new RegExp(`:${apiConfig.port}$`))
    for (const config of [apiConfig, workerConfig]) {
      expect(new URL(config.databaseUrl).hostname).toBe('postgres')
      expect(new URL(config.redisUrl).hostname).toBe('redis')
    }
    // API and workers must share the ledger, the queues and the prefix.
    expect(workerConfig.databaseUrl).toBe(apiConfig.databaseUrl)
    expect(workerConfig.redisUrl).toBe(apiConfig.redisUrl)
    expect(workerConfig.queuePrefix).toBe(apiConfig.queuePrefix)
    expect(service('migrate').environment?.DATABASE_URL).toBe(apiConfig.databaseUrl)
  })
})

const clusterCompose = parse(
  readFileSync(new URL('../infra/docker-compose.cluster.yml', import.meta.url), 'utf8'),
  { merge: true },
) as { services: Record<string, ComposeService & { image?: string; command?: unknown }> }

describe('infra/docker-compose.cluster.yml', () => {
  const services = clusterCompose.services
  const redisNodes = Object.keys(services).filter((name) => /^redis-\d$/.test(name))
  const apps = Object.keys(services).filter((name) => /^(api|worker)-\d$/.test(name))

  it('runs a six-node Redis Cluster, Postgres with a standby, PgBouncer, two APIs and two workers', () => {
    expect(redisNodes).toHaveLength(6)
    expect(JSON.stringify(services['redis-cluster']?.command)).toContain('--cluster-replicas 1')
    for (const name of ['postgres', 'postgres-standby', 'pgbouncer', 'migrate'])
      expect(services[name], name).toBeDefined()
    expect(JSON.stringify(services['postgres-standby']?.command)).toContain('pg_basebackup')
    expect(apps.sort()).toEqual(['api-1', 'api-2', 'worker-1', 'worker-2'])
  })

  it('gives every app the same settings the apps accept: the cluster, the partitions, PgBouncer', () => {
    const configs = apps.map((name) => {
      const env = services[name]?.environment ?? {}
      const variables = name.startsWith('api') ? API_CONFIG_VARIABLES : WORKER_CONFIG_VARIABLES
      for (const key of Object.keys(env)) expect(variables, `${name}: ${key}`).toContain(key)
      const interpolated = Object.fromEntries(
        Object.entries(env).map(([k, v]) => [k, v.replace(/\$\{[A-Z_0-9]+:-([^}]*)\}/g, '$1')]),
      )
      return name.startsWith('api') ? loadApiConfig(interpolated) : loadWorkerConfig(interpolated)
    })
    for (const config of configs) {
      expect(config.redisCluster?.nodes.map((n) => n.host).sort()).toEqual(redisNodes.sort())
      expect(config.queuePartitions).toBeGreaterThan(redisNodes.length)
      expect(new URL(config.databaseUrl).hostname).toBe('pgbouncer')
      expect(config.dbPreparedStatements).toBe(false)
      // Every API and worker must agree on where the keys are.
      expect(config.queuePartitions).toBe(configs[0]?.queuePartitions)
      expect(config.queuePrefix).toBe(configs[0]?.queuePrefix)
    }
    // The migration holds a session-level lock: straight to the primary.
    expect(new URL(services.migrate?.environment?.DATABASE_URL ?? '').hostname).toBe('postgres')
  })
})
