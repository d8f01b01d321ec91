import { setTimeout as sleep } from 'node:timers/promises'
import { QueueKeys } from 'bullmq'
import {
  DEFAULT_REDIS_TIMEOUTS,
  createRedisConnection,
  type RedisCluster,
  type RedisTimeouts,
} from './connection.ts'
import { attemptPartition, partitionPrefixes } from './partitions.ts'
import { isTransientRedisError } from './redis-errors.ts'

/**
 * The event stream of a queue that carries no jobs, used as a bell. The ledger is always written
 * first; an event only shortens the time until someone looks. A lost event costs latency
 * (heartbeats and bounded waits cover it), never correctness. An event may carry a detail: a copy
 * of what the ledger recorded, so whoever hears it need not read it back (see `StreamEvent`).
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

/**
 * Where a stream's keys are (see `QueueTopology`): a stream has one key per queue partition, each
 * under its partition's hash tag. A publisher puts an event in its attempt's partition; a listener
 * reads them all.
 */
interface StreamPlacement {
  /** Ignored when `cluster` is set. */
  readonly redisUrl: string
  readonly prefix: string
  /** `QUEUE_PARTITIONS` (default 1). */
  readonly partitions?: number
  /** `REDIS_CLUSTER_NODES`, when Redis is a cluster. */
  readonly cluster?: RedisCluster | undefined
}

/** The key of a stream in each partition, in partition order. */
function streamKeys(stream: string, placement: StreamPlacement): string[] {
  return partitionPrefixes({
    prefix: placement.prefix,
    partitions: placement.partitions ?? 1,
    cluster: placement.cluster,
  }).map((prefix) => new QueueKeys(prefix).toKey(stream, 'events'))
}

export interface PublisherOptions extends StreamPlacement {
  /** The publisher sends on a connection of its own (see `createStreamPublisher`). */
  /** The bounds of its connection (default `DEFAULT_REDIS_TIMEOUTS`). */
  readonly timeouts?: RedisTimeouts
}

export interface ListenerOptions<E> extends StreamPlacement {
  /** The listener blocks on XREAD, so it always gets connections of its own (one per partition). */
  readonly onEvent: (event: E) => void
  readonly blockingTimeoutMs?: number
  /**
   * The bounds of its connection (default `DEFAULT_REDIS_TIMEOUTS`); a blocking read may take its
   * blocking timeout on top of the command timeout.
   */
  readonly timeouts?: RedisTimeouts
}

/** A stream: its queue name, the event names it carries and the schema that admits them. */
export interface StreamSpec<E> {
  readonly name: string
  readonly eventNames: readonly string[]
  readonly schema: { safeParse(value: unknown): { success: boolean; data?: E | undefined } }
  /**
   * About how many entries the stream keeps (it is trimmed as it grows; default 50,000). A
   * listener reads from where it was, so this only needs to cover a listener's lag; a stream whose
   * events carry details keeps fewer, since each entry is larger.
   */
  readonly maxEvents?: number
}

/**
 * Most attempt ids one stream entry carries. An entry with ids joined by commas stays well under
 * a kilobyte per ten ids; a burst larger than this leaves in several entries.
 */
const MAX_IDS_PER_ENTRY = 256

/** Most bytes of details one entry carries; an entry always takes at least one event. */
const MAX_DETAIL_BYTES_PER_ENTRY = 64 * 1024

/**
 * A publisher that coalesces: events of one name published while an entry is being added leave
 * together in the next entry (`attemptIds`, comma-joined), so a burst of N settlements or cancels
 * costs a few XADDs instead of N. A lone event leaves at once (in a microtask after its publish).
 * Each `publish` settles when the entry that carries it was added (or failed to be).
 *
 * Entries leave on a connection of the publisher's own, opened at its first publish, and in the
 * layout BullMQ's `QueueEventsProducer` writes (`event` names the event), which
 * `createStreamListener` reads. Its own because ioredis copies every script defined on a
 * connection onto each pipeline it builds there, and auto-pipelining builds one per tick that sends
 * a command: on a connection BullMQ uses, that is its 64 scripts for every bell a worker rings.
 * This one carries no scripts and is not auto-pipelined: the events of a tick already leave
 * together, in the entries of one flush, and a flush's `XADD` is written at once instead of at the
 * end of the tick, so the bell that ends a wait is not held behind what the rest of the tick does
 * (a worker acknowledging the job, say).
 */
export function createStreamPublisher<E extends StreamEvent>(
  stream: string,
  options: PublisherOptions & { readonly maxEvents?: number },
): StreamPublisher<E> {
  const connection = createRedisConnection(options.redisUrl, `baton-${stream}-publisher`, {
    lazyConnect: true,
    cluster: options.cluster,
    ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }),
  })
  // ioredis reconnects on its own; an entry that cannot be added fails its `publish`, and the
  // caller logs that (`publishAfterRecord`). An unheard 'error' event would only print it again.
  connection.on('error', () => {})
  const eventsKeys = streamKeys(stream, options)
  const maxEvents = options.maxEvents ?? MAX_EVENTS
  interface Waiting {
    readonly attemptId: string
    /** The event's detail as JSON, or `undefined` when it has none. */
    readonly detail: string | undefined
    readonly resolve: () => void
    readonly reject: (error: unknown) => void
  }
  /** The events waiting for an entry, by stream key and event name. */
  const waiting = new Map<string, { key: string; eventName: string; events: Waiting[] }>()
  let adding: Promise<void> | undefined
  let scheduled = false

  function schedule(): void {
    if (scheduled || adding !== undefined) return
    scheduled = true
    queueMicrotask(flush)
  }

  function flush(): void {
    scheduled = false
    adding = addEntries().finally(() => {
      adding = undefined
      if (waiting.size > 0) schedule()
    })
  }

  async function addEntries(): Promise<void> {
    const entries = [...waiting.values()].flatMap(({ key, eventName, events }) =>
      entryChunks(events).map((chunk) => ({ key, eventName, chunk })),
    )
    waiting.clear()
    await Promise.all(
      entries.map(async ({ key, eventName, chunk }) => {
        try {
          const attemptIds = chunk.map((w) => w.attemptId).join(ENTRY_ID_SEPARATOR)
          const fields = ['event', eventName, 'attemptIds', attemptIds]
          if (chunk.some((w) => w.detail !== undefined)) {
            fields.push('details', `[${chunk.map((w) => w.detail ?? 'null').join()}]`)
          }
          await connection.xadd(key, 'MAXLEN', '~', maxEvents, '*', ...fields)
          for (const w of chunk) w.resolve()
        } catch (error) {
          for (const w of chunk) w.reject(error)
        }
      }),
    )
  }

  return {
    publish: (event) =>
      new Promise<void>((resolve, reject) => {
        const key = eventsKeys[attemptPartition(event.attemptId, eventsKeys.length)] as string
        const groupKey = `${key}\n${event.eventName}`
        const group = waiting.get(groupKey)
        const detail = event.detail === undefined ? undefined : JSON.stringify(event.detail)
        const entry = { attemptId: event.attemptId, detail, resolve, reject }
        if (group === undefined)
          waiting.set(groupKey, { key, eventName: event.eventName, events: [entry] })
        else group.events.push(entry)
        schedule()
      }),
    async close() {
      // What was published before close is added first (a flush begins in a microtask), while
      // Redis answers. Entries waiting for a connection that is down would wait for it forever:
      // closing fails them instead, and their callers log it (`publishAfterRecord`).
      let lost = false
      const down = new Promise<void>((resolve) =>
        connection.once('close', () => {
          lost = true
          resolve()
        }),
      )
      while ((scheduled || adding !== undefined) && !lost && connection.status === 'ready') {
        await Promise.race([adding ?? Promise.resolve(), down])
      }
      connection.disconnect()
    },
  }
}

/**
 * What a stream carries: a named event about one attempt, and optionally its detail (any JSON
 * value), which a listener may use in place of reading the ledger back. A detail is only ever a
 * copy of what the ledger recorded before the event was published.
 */
export interface StreamEvent {
  readonly eventName: string
  readonly attemptId: string
  readonly detail?: unknown
}

/** Attempt ids never hold a comma (they are UUIDs), so a comma joins them in one entry. */
const ENTRY_ID_SEPARATOR = ','

/** Events split into entries of at most `MAX_IDS_PER_ENTRY` ids and about `MAX_DETAIL_BYTES_PER_ENTRY`. */
function entryChunks<T extends { readonly detail: string | undefined }>(
  items: readonly T[],
): T[][] {
  const out: T[][] = []
  let chunk: T[] = []
  let bytes = 0
  for (const item of items) {
    const size = item.detail?.length ?? 0
    if (
      chunk.length >= MAX_IDS_PER_ENTRY ||
      (chunk.length > 0 && bytes + size > MAX_DETAIL_BYTES_PER_ENTRY)
    ) {
      out.push(chunk)
      chunk = []
      bytes = 0
    }
    chunk.push(item)
    bytes += size
  }
  if (chunk.length > 0) out.push(chunk)
  return out
}

/**
 * The events one stream entry carries: one per id of its `attemptIds` (an entry from an older
 * publisher names a single `attemptId`), with the detail at the same place of its `details` (a
 * JSON array; `null` where an event has none), each checked by the stream's schema. Malformed
 * events are dropped, and malformed details too (the event stays), since the stream is a bell and
 * the ledger decides.
 */
export function eventsOfEntry<E>(
  stream: StreamSpec<E>,
  eventName: string,
  fields: Record<string, unknown>,
): E[] {
  const joined = fields.attemptIds ?? fields.attemptId
  if (typeof joined !== 'string') return []
  const details = detailsOf(fields.details)
  const events: E[] = []
  joined.split(ENTRY_ID_SEPARATOR).forEach((attemptId, i) => {
    const detail = details?.[i] ?? undefined
    const parsed = stream.schema.safeParse(
      detail === undefined ? { eventName, attemptId } : { eventName, attemptId, detail },
    )
    if (parsed.success && parsed.data !== undefined) events.push(parsed.data)
    else if (detail !== undefined) {
      // A detail the schema refuses does not silence the bell itself.
      const bare = stream.schema.safeParse({ eventName, attemptId })
      if (bare.success && bare.data !== undefined) events.push(bare.data)
    }
  })
  return events
}

function detailsOf(field: unknown): readonly unknown[] | undefined {
  if (typeof field !== 'string') return undefined
  try {
    const parsed: unknown = JSON.parse(field)
    return Array.isArray(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

/**
 * The one policy for ringing a bell after the ledger was written: publish, and on failure log at
 * warn with the attempt id and go on. The fact is durable; whoever waits for the bell has a
 * fallback (heartbeats for workers, the bound for waits), so a failed publish is never an error.
 * Resolves whether the bell rang (a caller may keep one that did not, to ring it later).
 */
export async function publishAfterRecord<E extends StreamEvent>(
  publisher: StreamPublisher<E>,
  event: E,
  logger: WarnLogger,
): Promise<boolean> {
  try {
    await publisher.publish(event)
    return true
  } catch (error) {
    logger.warn(
      { err: error, attemptId: event.attemptId, event: event.eventName },
      'event not published; the ledger has it and the fallback will find it',
    )
    return false
  }
}

/** How long the listener waits before it reads again after a read failed (Redis down, say). */
const LISTENER_RETRY_MS = 250

/**
 * Listens to a stream from the moment `ready()` resolves: it reads on from the newest entry
 * there was then, so an event published after `ready()` is heard, and after a lost connection
 * it reads on from the last entry it heard (as far as the stream's trimming kept them).
 * Malformed events are ignored, and so is a handler's throw on one event (the next are heard):
 * the stream is a bell, and the ledger decides.
 */
export function createStreamListener<E>(
  stream: StreamSpec<E>,
  options: ListenerOptions<E>,
): StreamListener {
  const heardNames = new Set(stream.eventNames)
  let closing = false

  function hear(fields: readonly string[]): void {
    const args: Record<string, string> = {}
    for (let i = 0; i + 1 < fields.length; i += 2)
      args[fields[i] as string] = fields[i + 1] as string
    const eventName = args.event
    if (eventName === undefined || !heardNames.has(eventName)) return
    for (const event of eventsOfEntry(stream, eventName, args)) {
      try {
        options.onEvent(event)
      } catch {
        // A handler that throws on one event does not stop the listener for the next ones.
      }
    }
  }

  // One reader per partition, each blocking on its own connection: the partitions' keys are in
  // different cluster slots, which one XREAD cannot read together.
  const readers = streamKeys(stream.name, options).map((eventsKey) =>
    readPartition(eventsKey, options, stream.name, hear, () => closing),
  )

  return {
    ready: () => Promise.all(readers.map((r) => r.started)).then(() => undefined),
    async close() {
      closing = true
      await Promise.all(readers.map((r) => r.close()))
    },
  }
}

/** Reads one partition's key of a stream, from its newest entry, until `closing()`. */
function readPartition(
  eventsKey: string,
  options: StreamPlacement & Pick<ListenerOptions<unknown>, 'blockingTimeoutMs' | 'timeouts'>,
  streamName: string,
  hear: (fields: readonly string[]) => void,
  closing: () => boolean,
): { readonly started: Promise<string>; close(): Promise<void> } {
  const blockingTimeoutMs = options.blockingTimeoutMs ?? 5_000
  const timeouts = options.timeouts ?? DEFAULT_REDIS_TIMEOUTS
  const connection = createRedisConnection(options.redisUrl, `baton-${streamName}-listener`, {
    timeouts: { ...timeouts, commandTimeoutMs: blockingTimeoutMs + timeouts.commandTimeoutMs },
    cluster: options.cluster,
  })
  // ioredis reconnects on its own, and a read that failed is tried again: an unheard 'error'
  // event would only print what the loop already handles.
  connection.on('error', () => {})

  /** The id of the newest entry, read before the first read (`0-0` while the stream is empty). */
  async function newestId(): Promise<string> {
    for (;;) {
      try {
        const [newest] = await connection.xrevrange(eventsKey, '+', '-', 'COUNT', 1)
        return newest?.[0] ?? '0-0'
      } catch (error) {
        if (closing()) throw error
        await sleep(LISTENER_RETRY_MS)
      }
    }
  }

  const started = newestId()
  const reading = started.then(async (from) => {
    let lastId = from
    while (!closing()) {
      let reply: [string, [string, string[]][]][] | null
      try {
        reply = await connection.xread('BLOCK', blockingTimeoutMs, 'STREAMS', eventsKey, lastId)
      } catch (error) {
        if (closing()) return
        // A read unanswered past its bound sat on a connection that stopped answering (its peer
        // gone without a word): read on over a fresh one, from the last entry heard.
        if (isTransientRedisError(error) && connection.status === 'ready')
          connection.disconnect(true)
        await sleep(LISTENER_RETRY_MS)
        continue
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          lastId = id
          hear(fields)
        }
      }
    }
  })
  // A listener closed before it started has nothing to report.
  reading.catch(() => {})
  return {
    started,
    async close() {
      // Ends a blocked read at once; the loop sees `closing` and stops.
      connection.disconnect()
      await reading.catch(() => {})
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
    createPublisher: (options) =>
      createStreamPublisher(stream.name, { ...options, maxEvents: stream.maxEvents ?? MAX_EVENTS }),
    createListener: (options) => createStreamListener(stream, options),
  }
}
