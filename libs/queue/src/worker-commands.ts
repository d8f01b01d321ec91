import {
  QueueName,
  WORKER_COMMAND_NAMES,
  workerCommandSchema,
  type WorkerCommand,
} from '@baton/contracts'
import {
  defineStream,
  publishAfterRecord,
  type StreamPublisher,
  type WarnLogger,
} from './event-stream.ts'

/** Commands the API publishes after it recorded a cancel or steering request; read by workers. */
const workerCommands = defineStream<WorkerCommand>({
  name: QueueName.WorkerCommands,
  eventNames: WORKER_COMMAND_NAMES,
  schema: workerCommandSchema,
})

export type WorkerCommandPublisher = StreamPublisher<WorkerCommand>
export const createWorkerCommandPublisher = workerCommands.createPublisher
export const createWorkerCommandListener = workerCommands.createListener

/** Tells the owner of an attempt about a request already recorded in the ledger. */
export function sendWorkerCommand(
  publisher: WorkerCommandPublisher,
  command: WorkerCommand,
  logger: WarnLogger,
): Promise<boolean> {
  return publishAfterRecord(publisher, command, logger)
}
