import { createLogger } from '@baton/observability'
import { loadConfig } from './config.ts'
import { createWorkerRuntime } from './runtime.ts'
import { loadWorkerSubagents } from './subagents/subagent-catalog.ts'

const config = loadConfig(process.env)
const logger = createLogger({ service: 'baton-worker', level: config.logLevel })
const subagents = await loadWorkerSubagents({
  ...(config.subagentsDir === undefined ? {} : { subagentsDir: config.subagentsDir }),
  ...(config.scriptedModelsDir === undefined
    ? {}
    : { scriptedModelsDir: config.scriptedModelsDir }),
  defaultModel: config.defaultModel,
  models: config.models,
  logger: logger.child({ component: 'subagents' }),
})
const runtime = createWorkerRuntime(config, logger, subagents)

let stopping = false
function stop(signal: string): void {
  if (stopping) return
  stopping = true
  logger.info({ signal }, 'stop signal received')
  runtime.shutdown(config.shutdownDeadlineMs).then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, 'shutdown did not finish cleanly')
      process.exit(1)
    },
  )
}
process.on('SIGTERM', () => stop('SIGTERM'))
process.on('SIGINT', () => stop('SIGINT'))

await runtime.start()
