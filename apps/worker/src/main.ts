import { createLogger } from '@baton/observability'
import { loadConfig } from './config.ts'
import { createWorkerRuntime } from './runtime.ts'
import { shutdownUntilDrained } from './shutdown.ts'
import { loadWorkerSubagents } from './subagents/subagent-catalog.ts'

const config = loadConfig(process.env)
const logger = createLogger({ service: 'baton-worker', level: config.logLevel })
const subagents = await loadWorkerSubagents({
  ...(config.subagentsDir === undefined ? {} : { subagentsDir: config.subagentsDir }),
  ...(config.profilesFile === undefined ? {} : { profilesFile: config.profilesFile }),
  ...(config.scriptedModelsDir === undefined
    ? {}
    : { scriptedModelsDir: config.scriptedModelsDir }),
  defaultModel: config.defaultModel,
  models: config.models,
  logger: logger.child({ component: 'subagents' }),
  scriptedEnabled: config.scriptedEnabled,
})
const runtime = createWorkerRuntime(config, logger, subagents)

const forced = new AbortController()
let stopping = false
/**
 * Checked shutdown until the drain completes (exit 0). A second signal, or the operator's hard
 * deadline, gives the drain up (exit 1): what is still owned then ends as process loss once its
 * lease expires.
 */
async function stop(signal: string): Promise<void> {
  if (stopping) {
    if (forced.signal.aborted) return
    logger.warn({ signal }, 'second stop signal; giving up the drain')
    forced.abort()
    return
  }
  stopping = true
  logger.info({ signal }, 'stop signal received')
  const hardDeadlineMs = config.shutdownHardDeadlineMs
  if (hardDeadlineMs !== undefined) {
    setTimeout(() => {
      logger.error({ hardDeadlineMs }, 'hard shutdown deadline passed; giving up the drain')
      forced.abort()
    }, hardDeadlineMs).unref()
  }
  // A drain stuck where it cannot be cancelled (closing connections) must not outlive the order.
  forced.signal.addEventListener('abort', () => setTimeout(() => process.exit(1), 1_000).unref())
  try {
    await shutdownUntilDrained(
      (deadlineMs, cancel) => runtime.shutdownChecked(deadlineMs, cancel),
      config.shutdownDeadlineMs,
      logger,
      forced.signal,
    )
    process.exit(0)
  } catch (error) {
    logger.error({ err: error }, 'worker stopped without a complete drain')
    process.exit(1)
  }
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))

await runtime.start()
