export { createLogger } from './logger.ts'
export type { CreateLoggerOptions, Logger } from './logger.ts'
export { API_READY_MESSAGE, WORKER_READY_MESSAGE } from './ready-messages.ts'
