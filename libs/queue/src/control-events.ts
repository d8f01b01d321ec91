import { QueueEvents, QueueEventsProducer, type ConnectionOptions } from 'bullmq'
import {
  CONTROL_EVENT_NAMES,
  QueueName,
  controlEventSchema,
  type ControlEvent,
} from '@baton/contracts'
import { createRedisConnection } from './connection.ts'

/**
 * Control and completion doorbells on the `control` queue's event stream. The ledger is always
 * written first; an event only shortens the time until someone looks. A lost event costs latency
 * (heartbeats and bounded waits cover it), never correctness.
 */
const MAX_EVENTS = 50_000

export interface ControlPublisher {
  publish(event: ControlEvent): Promise<void>
  close(): Promise<void>
}

export function createControlPublisher(options: {
  connection: ConnectionOptions
  prefix: string
}): ControlPublisher {
  const producer = new QueueEventsProducer(QueueName.Control, {
    connection: options.connection,
    prefix: options.prefix,
  })
  return {
    publish: (event) => producer.publishEvent(event, MAX_EVENTS),
    close: () => producer.close(),
  }
}

export interface ControlListener {
  /** Resolves once the listener reads the stream (events published before may be missed). */
  ready(): Promise<void>
  close(): Promise<void>
}

/**
 * Listens to the control stream from "now". Malformed events are ignored: the stream is a
 * doorbell, and the ledger decides.
 */
export function createControlListener(options: {
  /** The listener blocks on XREAD, so it always gets a connection of its own. */
  redisUrl: string
  prefix: string
  onEvent: (event: ControlEvent) => void
  blockingTimeoutMs?: number
}): ControlListener {
  const connection = createRedisConnection(options.redisUrl, 'baton-control-listener')
  const events = new QueueEvents(QueueName.Control, {
    connection,
    prefix: options.prefix,
    blockingTimeout: options.blockingTimeoutMs ?? 5_000,
  })
  // QueueEvents emits a custom event under its name, with the remaining fields as arguments.
  for (const eventName of CONTROL_EVENT_NAMES) {
    const handler = (args: Record<string, unknown>): void => {
      const parsed = controlEventSchema.safeParse({ ...args, eventName })
      if (parsed.success) options.onEvent(parsed.data)
    }
    events.on(eventName as never, handler as never)
  }
  return {
    ready: () => events.waitUntilReady().then(() => undefined),
    async close() {
      await events.close()
      connection.disconnect()
    },
  }
}
