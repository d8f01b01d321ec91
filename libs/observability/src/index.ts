export { createLogger } from './logger.ts'
export type { CreateLoggerOptions, Logger } from './logger.ts'
