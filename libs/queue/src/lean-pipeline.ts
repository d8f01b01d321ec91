import { Pipeline, Redis, type ChainableCommander } from 'ioredis'

/**
 * Pipelines that the young-generation garbage collector can free.
 *
 * ioredis's `Pipeline` constructor gives each instance its own `length` getter
 * (`Object.defineProperty(this, 'length', { get: function () { … } })`). A getter that is a new
 * function on every instance makes V8 give every pipeline a hidden class of its own, held in the
 * old generation; from there the pipeline, and all it holds (its commands, their promises and
 * replies), outlives every scavenge and is freed only by a full mark-compact. An auto-pipelined
 * connection builds one pipeline per tick that sends a command, so at rest a worker carried about
 * 7.5 MB of such survivors into each scavenge, which then paused it for about 10 ms.
 *
 * A lean pipeline is the same object without that getter: it is made from `Pipeline.prototype`
 * and set up field by field as ioredis's constructor sets it up (ioredis 5.x), and reads `length`
 * from a getter defined once on its prototype. `lean-pipeline.int.test.ts` checks that it has
 * exactly the fields a constructed pipeline has, so an ioredis upgrade that changes them fails
 * there rather than here.
 */
const LEAN_PIPELINE_PROTOTYPE = Object.create(Pipeline.prototype, {
  length: {
    get(this: { _queue: unknown[] }): number {
      return this._queue.length
    },
  },
}) as Pipeline

/** The fields of a pipeline as ioredis's constructors (Commander's, then Pipeline's) set them. */
interface PipelineFields {
  options: unknown
  scriptsSet: Record<string, unknown>
  addedBuiltinSet: Set<string>
  redis: Redis
  isPipeline: true
  replyPending: number
  _queue: unknown[]
  _result: unknown[]
  _transactions: number
  _shaToScript: Record<string, unknown>
  isCluster: boolean
  promise: Promise<unknown>
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  [command: string]: unknown
}

interface ConnectionInternals {
  readonly options: unknown
  readonly isCluster?: boolean
  readonly scriptsSet: Record<string, { readonly sha: string }>
  readonly addedBuiltinSet: Set<string>
  readonly [command: string]: unknown
}

/** A pipeline on `redis` that a scavenge can free, otherwise as `redis.pipeline()` makes it. */
export function leanPipeline(redis: Redis): Pipeline {
  const source = redis as unknown as ConnectionInternals
  const pipeline = Object.create(LEAN_PIPELINE_PROTOTYPE) as PipelineFields
  // Commander's constructor.
  pipeline.options = {}
  pipeline.scriptsSet = {}
  pipeline.addedBuiltinSet = new Set()
  // Pipeline's constructor, but for the `length` getter.
  pipeline.redis = redis
  pipeline.isPipeline = true
  pipeline.replyPending = 0
  pipeline._queue = []
  pipeline._result = []
  pipeline._transactions = 0
  pipeline._shaToScript = {}
  pipeline.isCluster = redis.constructor.name === 'Cluster' || source.isCluster === true
  pipeline.options = source.options
  for (const name of Object.keys(source.scriptsSet)) {
    const script = source.scriptsSet[name]
    if (script !== undefined) pipeline._shaToScript[script.sha] = script
    pipeline[name] = source[name]
    pipeline[`${name}Buffer`] = source[`${name}Buffer`]
  }
  for (const name of source.addedBuiltinSet) {
    pipeline[name] = source[name]
    pipeline[`${name}Buffer`] = source[`${name}Buffer`]
  }
  pipeline.promise = new Promise((resolve, reject) => {
    pipeline.resolve = resolve
    pipeline.reject = reject
  })
  return pipeline as unknown as Pipeline
}

/**
 * A connection whose `pipeline()` (which auto-pipelining also calls, once per tick) builds lean
 * pipelines. `multi()` and `duplicate()` are ioredis's own.
 */
export class LeanPipelineRedis extends Redis {
  override pipeline(commands?: unknown[][]): ChainableCommander {
    const pipeline = leanPipeline(this)
    if (Array.isArray(commands)) pipeline.addBatch(commands)
    return pipeline
  }
}
