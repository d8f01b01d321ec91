import { API_READY_MESSAGE, createLogger } from '@baton/observability'
import { composeApi } from './compose.ts'
import { loadConfig } from './config.ts'

const config = loadConfig(process.env)
const logger = createLogger({ service: 'baton-api', level: config.logLevel })
const api = await composeApi(config, logger)

let stopping = false
function stop(signal: string): void {
  if (stopping) return
  stopping = true
  logger.info({ signal }, 'stop signal received')
  api.close().then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, 'shutdown did not finish cleanly')
      process.exit(1)
    },
  )
}
process.on('SIGTERM', () => stop('SIGTERM'))
process.on('SIGINT', () => stop('SIGINT'))

const address = await api.app.listen({ host: config.host, port: config.port })
logger.info({ address }, API_READY_MESSAGE)
