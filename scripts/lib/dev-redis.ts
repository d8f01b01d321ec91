// Redis for `npm run up`: the one at REDIS_URL when it answers, else a redis-server of up's own on
// the URL's port (no persistence: Redis is only the doorbell, the ledger is Postgres).
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { errorText, isLocalHost, portOf, safeUrl, type DevService } from './dev-service.ts'
import { spawnOwnServer, waitUntilAnswering } from './own-service.ts'

const CHECK_TIMEOUT_MS = 2_000

/** undefined when Redis answers PING at `url`; otherwise why not. */
export async function redisProblem(
  url: string,
  warn: (line: string) => void = () => undefined,
): Promise<string | undefined> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CHECK_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  })
  // ioredis rejects connect() with a bare "Connection is closed"; the error event has the cause.
  let cause: string | undefined
  redis.on('error', (error: Error) => {
    cause ??= error.message
  })
  try {
    await redis.connect()
    await redis.ping()
    const info = await redis.info('server')
    const version = /redis_version:(\S+)/.exec(info)?.[1]
    if (version !== undefined && Number(version.split('.')[0]) < 7) {
      warn(`Redis ${version} found; Baton is tested on Redis 7.`)
    }
    return undefined
  } catch (error) {
    return cause ?? errorText(error)
  } finally {
    redis.disconnect()
  }
}

function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0
}

export async function ensureRedis(
  url: string,
  devDir: string,
  warn: (line: string) => void,
): Promise<DevService> {
  const problem = await redisProblem(url, warn)
  if (problem === undefined)
    return { name: 'redis', said: `redis: using the service at ${safeUrl(url)}` }
  const { hostname } = new URL(url)
  if (!isLocalHost(hostname)) {
    throw new Error(
      `Redis is not reachable at ${safeUrl(url)} (${problem}), and up starts its own only on this machine.`,
    )
  }
  if (!hasRedisServer()) {
    throw new Error(
      [
        `Redis is not reachable at ${safeUrl(url)} (${problem}) and redis-server is not installed.`,
        '    Install it (Debian/Ubuntu: apt-get install redis-server) and run `npm run up` again,',
        '    or start one with Docker:  docker compose -f infra/docker-compose.yml up -d redis',
      ].join('\n'),
    )
  }
  const dir = join(devDir, 'redis')
  mkdirSync(dir, { recursive: true })
  const port = portOf(url, 6379)
  const server = spawnOwnServer(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      hostname.replace(/^\[|\]$/g, ''),
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--dir',
      dir,
    ],
    { logFile: join(dir, 'redis.log'), stopSignal: 'SIGTERM' },
  )
  await waitUntilAnswering(
    'redis-server',
    server,
    async () => (await redisProblem(url)) === undefined,
  )
  return { name: 'redis', said: `redis: started its own at ${safeUrl(url)} (in ${dir})`, server }
}
