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

/**
 * Most attempt ids one stream entry carries. An entry with ids joined by commas stays well under
 * a kilobyte per ten ids; a burst larger than this leaves in several entries.
 */
const MAX_IDS_PER_ENTRY = 256

/**
 * A publisher that coalesces: events of one name published while an entry is being added leave
 * together in the next entry (`attemptIds`, comma-joined), so a burst of N settlements or cancels
 * costs a few XADDs instead of N. A lone event leaves at once (at the end of the current tick).
 * Each `publish` settles when the entry that carries it was added (or failed to be).
 */
export function createStreamPublisher<E extends StreamEvent>(
  stream: string,
  options: PublisherOptions,
): StreamPublisher<E> {
  const producer = new QueueEventsProducer(stream, {
    connection: options.connection,
    prefix: options.prefix,
  })
  interface Waiting {
    readonly attemptId: string
    readonly resolve: () => void
    readonly reject: (error: unknown) => void
  }
  const waiting = new Map<string, Waiting[]>()
  let adding = false
  let scheduled = false

  function schedule(): void {
    if (scheduled || adding) return
    scheduled = true
    queueMicrotask(() => void flush())
  }

  async function flush(): Promise<void> {
    scheduled = false
    adding = true
    const entries = [...waiting].flatMap(([eventName, events]) =>
      chunks(events, MAX_IDS_PER_ENTRY).map((chunk) => ({ eventName, chunk })),
    )
    waiting.clear()
    await Promise.all(
      entries.map(async ({ eventName, chunk }) => {
        try {
          const attemptIds = chunk.map((w) => w.attemptId).join(ENTRY_ID_SEPARATOR)
          await producer.publishEvent({ eventName, attemptIds }, MAX_EVENTS)
          for (const w of chunk) w.resolve()
        } catch (error) {
          for (const w of chunk) w.reject(error)
        }
      }),
    )
    adding = false
    if (waiting.size > 0) schedule()
  }

  return {
    publish: (event) =>
      new Promise<void>((resolve, reject) => {
        const group = waiting.get(event.eventName)
        const entry = { attemptId: event.attemptId, resolve, reject }
        if (group === undefined) waiting.set(event.eventName, [entry])
        else group.push(entry)
        schedule()
      }),
    close: () => producer.close(),
  }
}

/** What a stream carries: a named event about one attempt. */
export interface StreamEvent {
  readonly eventName: string
  readonly attemptId: string
}

/** Attempt ids never hold a comma (they are UUIDs), so a comma joins them in one entry. */
const ENTRY_ID_SEPARATOR = ','

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/**
 * The events one stream entry carries: one per id of its `attemptIds` (an entry from an older
 * publisher names a single `attemptId`), each checked by the stream's schema; malformed ones are
 * dropped, since the stream is a bell and the ledger decides.
 */
export function eventsOfEntry<E>(
  stream: StreamSpec<E>,
  eventName: string,
  fields: Record<string, unknown>,
): E[] {
  const joined = fields.attemptIds ?? fields.attemptId
  if (typeof joined !== 'string') return []
  const events: E[] = []
  for (const attemptId of joined.split(ENTRY_ID_SEPARATOR)) {
    const parsed = stream.schema.safeParse({ eventName, attemptId })
    if (parsed.success && parsed.data !== undefined) events.push(parsed.data)
  }
  return events
}

/**
 * The one policy for ringing a bell after the ledger was written: publish, and on failure log at
 * warn with the attempt id and go on. The fact is durable; whoever waits for the bell has a
 * fallback (heartbeats for workers, the bound for waits), so a failed publish is never an error.
 */
export async function publishAfterRecord<E extends StreamEvent>(
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
      for (const event of eventsOfEntry(stream, eventName, args)) options.onEvent(event)
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
export function defineStream<E extends StreamEvent>(
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
