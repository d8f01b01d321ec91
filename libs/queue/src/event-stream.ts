import { QueueEvents, QueueEventsProducer, type ConnectionOptions } from 'bullmq'
import { createRedisConnection } from './connection.ts'

/**
 * The event stream of a queue that carries no jobs, used as a bell. The ledger is always written
 * first; an event only shortens the time until someone looks. A lost event costs latency
 * (heartbeats and bounded waits cover it), never correctness.
 */
const MAX_EVENTS = 50_000

export interface StreamPublisher<E> {
  publish(event: E): Promise<void>
  close(): Promise<void>
}

export interface StreamListener {
  /** Resolves once the listener reads the stream (events published before may be missed). */
  ready(): Promise<void>
  close(): Promise<void>
}

/** What a notification's failure is told to: the publisher's caller logs it, once. */
export interface WarnLogger {
  warn(fields: Record<string, unknown>, message: string): void
}

export interface PublisherOptions {
  readonly connection: ConnectionOptions
  readonly prefix: string
}

export interface ListenerOptions<E> {
  /** The listener blocks on XREAD, so it always gets a connection of its own. */
  readonly redisUrl: string
  readonly prefix: string
  readonly onEvent: (event: E) => void
  readonly blockingTimeoutMs?: number
}

/** A stream: its queue name, the event names it carries and the schema that admits them. */
export interface StreamSpec<E> {
  readonly name: string
  readonly eventNames: readonly string[]
  readonly schema: { safeParse(value: unknown): { success: boolean; data?: E | undefined } }
}

export function createStreamPublisher<E extends { eventName: string }>(
  stream: string,
  options: PublisherOptions,
): StreamPublisher<E> {
  const producer = new QueueEventsProducer(stream, {
    connection: options.connection,
    prefix: options.prefix,
  })
  return {
    publish: (event) => producer.publishEvent(event, MAX_EVENTS),
    close: () => producer.close(),
  }
}

/**
 * The one policy for ringing a bell after the ledger was written: publish, and on failure log at
 * warn with the attempt id and go on. The fact is durable; whoever waits for the bell has a
 * fallback (heartbeats for workers, the bound for waits), so a failed publish is never an error.
 */
export async function publishAfterRecord<E extends { eventName: string; attemptId: string }>(
  publisher: StreamPublisher<E>,
  event: E,
  logger: WarnLogger,
): Promise<void> {
  try {
    await publisher.publish(event)
  } catch (error) {
    logger.warn(
      { err: error, attemptId: event.attemptId, event: event.eventName },
      'event not published; the ledger has it and the fallback will find it',
    )
  }
}

/**
 * Listens to a stream from "now". Malformed events are ignored: the stream is a bell, and the
 * ledger decides.
 */
export function createStreamListener<E>(
  stream: StreamSpec<E>,
  options: ListenerOptions<E>,
): StreamListener {
  const connection = createRedisConnection(options.redisUrl, `baton-${stream.name}-listener`)
  const events = new QueueEvents(stream.name, {
    connection,
    prefix: options.prefix,
    blockingTimeout: options.blockingTimeoutMs ?? 5_000,
  })
  // QueueEvents emits a custom event under its name, with the remaining fields as arguments.
  for (const eventName of stream.eventNames) {
    const handler = (args: Record<string, unknown>): void => {
      const parsed = stream.schema.safeParse({ ...args, eventName })
      if (parsed.success && parsed.data !== undefined) options.onEvent(parsed.data)
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

/** A stream's two ends, typed by its events. */
export function defineStream<E extends { eventName: string }>(
  stream: StreamSpec<E>,
): {
  readonly createPublisher: (options: PublisherOptions) => StreamPublisher<E>
  readonly createListener: (options: ListenerOptions<E>) => StreamListener
} {
  return {
    createPublisher: (options) => createStreamPublisher(stream.name, options),
    createListener: (options) => createStreamListener(stream, options),
  }
}
