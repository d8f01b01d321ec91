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
/** Checked shutdown, retried while it reports work still owned; leases cover a final failure. */
async function stop(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  logger.info({ signal }, 'stop signal received')
  for (let round = 1; round <= 3; round += 1) {
    try {
      await runtime.shutdownChecked(config.shutdownDeadlineMs)
      process.exit(0)
    } catch (error) {
      logger.error({ err: error, round }, 'checked shutdown did not finish')
    }
  }
  process.exit(1)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))

await runtime.start()
