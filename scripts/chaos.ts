// `npm run chaos [-- --json] [--count N] [--hosted N] [--clients N] [--workers N] [--verbose] [--strict]
//                 [--cluster] [--submit-timeout S] [--quiesce-timeout S]`
//
// Runs the whole system as separate processes (the API and a worker fleet), drives N delegations of
// the built-in `scripted` child (instant, slow, failing, hanging-then-cancelled, steered), of the
// `rememberer` markdown subagent (continued: a first turn, then a continuation of the same agent)
// and of the `witnessed` ACP subagent (whose child records each start outside the ledger) from
// many concurrent HTTP clients, alongside --hosted hosted sessions whose parents (scripted, run by
// the fleet) delegate to one or two children each and are given three user runs and a
// continuation run per late result (lib/chaos/hosted.ts), and meanwhile injects faults at random intervals: SIGKILL a worker
// (and start a replacement), restart the API, FLUSHDB the chaos Redis database, terminate the
// chaos database's Postgres backends; and through fault proxies between the fleet and the real
// Postgres and Redis: stall Postgres, reset its connections, stall Redis; hold locks on hot ledger
// rows; restart every worker one by one. With --cluster the fleet runs on a private Redis Cluster
// (3 masters, 3 replicas, started and stopped by this script) with the queue in 8 partitions; the
// Redis faults then act on its masters (lib/chaos/faults.ts) and one more fires: SIGKILL a master. One session in eight has a webhook to a receiver this
// script runs (lib/chaos/webhooks.ts), which fails and answers late at random. Then it waits for
// quiescence and audits the ledger. Every wait after the faults (follow-ups, quiescence, hosted
// runs) lasts while attempts keep ending and gives up once none has for --quiesce-timeout seconds:
//   lost                 attempts the clients got a 202 for (continuations too), not terminal
//   stuck                attempts in the ledger that are not terminal after the wait
//   duplicate_terminal   attempts with more than one transition to `terminal`
//   duplicate_execution  attempts with more than one `claimed` transition
//   orphan_transitions   attempts named by audit rows (transitions) that the ledger does not hold
//   context.bad          violations of the agent-history checks (lib/chaos/history.ts)
//   witness.bad          disagreements between the ledger and the witnessed starts
//   artifacts.bad        artifacts whose content, binding or namespace usage is wrong, or chunks
//                        left behind (of an expired artifact, or of nothing)
//   webhooks.missing     events of the pushed sessions the receiver never processed
//   webhooks.bad_signature  requests whose Standard Webhooks signature did not verify
//   hosted.overlapping   starts of a hosted run while another run of its session was active
//   hosted.continuations_missing / _duplicate  results of an ended hosted run without exactly one
//                        continuation run its receipt names (or a recorded suppression)
//   hosted.conversation_bad  conversations with a gap, a foreign or misplaced turn, a stream that
//                        differs from them, or a run that was not given all earlier runs' turns
//   hosted.stuck_runs    hosted runs still queued or active after the wait
// The parts live in lib/chaos/: workload, follow-ups, faults, fleet, audit, report, one run object
// (run.ts) passed to each, and one retry helper (retry.ts). With --json the last stdout line is one
// JSON object (everything else goes to stderr). Exits non-zero when an invariant fails, when fewer
// than N delegations (or fewer continuations than continued delegations) were accepted, or when a
// fault kind of the topology never fired. A process that exits unasked (a crash) is restarted, as a supervisor
// would, and reported; --strict also fails the run on it. --verbose echoes every process's output
// to stderr. Isolation: database `baton_chaos` (recreated), Redis logical database 9 (flushed at
// the end), a unique queue prefix, a random API port. Process logs (and the subagents' specs,
// script, workspace and the witness file) go to a temporary directory.
import net from 'node:net'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { createDb } from '@baton/store'
import { startRedisCluster } from '@baton/testing/redis-cluster'
import { abortWhenStalled, audit, waitForHostedRuns, waitForQuiescence } from './lib/chaos/audit.ts'
import { REMEMBERER, writeRemembererDirs } from './lib/chaos/history.ts'
import { submitHosted, writeChaosProfiles } from './lib/chaos/hosted.ts'
import { startFaultProxy } from '@baton/testing/fault-proxy'
import { faultLoop, type ChaosRedis } from './lib/chaos/faults.ts'
import { Fleet } from './lib/chaos/fleet.ts'
import { failuresOf, printDetails, printTables, summarize } from './lib/chaos/report.ts'
import {
  CLUSTER_PARTITIONS,
  createRun,
  settleFollowUps,
  type ChaosOptions,
} from './lib/chaos/run.ts'
import { writeWitnessSpec } from './lib/chaos/witness.ts'
import { submitWorkload } from './lib/chaos/workload.ts'
import { createParentRuns } from './lib/chaos/parent-runs.ts'
import { WEBHOOK_ENV, startPushDelivery, type PushDelivery } from './lib/chaos/webhooks.ts'
import {
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
  databaseName,
  issueDefaultKey,
  prepareDatabase,
  withDatabase,
} from './lib/services.ts'

function parseOptions(): ChaosOptions {
  const { values: args } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      strict: { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
      count: { type: 'string', default: '10000' },
      hosted: { type: 'string', default: '24' },
      clients: { type: 'string', default: '64' },
      workers: { type: 'string', default: '3' },
      'submit-timeout': { type: 'string', default: '180' },
      'quiesce-timeout': { type: 'string', default: '120' },
    },
  })
  const options = {
    json: args.json,
    verbose: args.verbose,
    strict: args.strict,
    cluster: args.cluster,
    count: Number(args.count),
    hosted: Number(args.hosted),
    clients: Number(args.clients),
    workers: Number(args.workers),
    submitTimeoutMs: Number(args['submit-timeout']) * 1000,
    quiesceTimeoutMs: Number(args['quiesce-timeout']) * 1000,
  }
  for (const name of ['count', 'hosted', 'clients', 'workers'] as const)
    if (!Number.isInteger(options[name]) || options[name] < 1)
      throw new Error(`--${name} must be ≥ 1`)
  if (options.workers < 3) console.error('chaos: note: the issue asks for at least three workers')
  return options
}

/** 4100 + random, checked free on 127.0.0.1. */
async function pickPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = 4100 + Math.floor(Math.random() * 800)
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error('no free port in 4100–4899')
}

async function main(): Promise<number> {
  const databaseUrl = withDatabase(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, 'baton_chaos')
  await prepareDatabase(databaseUrl, { fresh: true })
  const run = createRun(parseOptions(), {
    redisUrl: process.env.REDIS_URL ?? DEFAULT_REDIS_URL,
    databaseUrl,
    port: await pickPort(),
    // The run's clients act as one namespace, with a key issued for this run.
    apiKey: await issueDefaultKey(databaseUrl, 'chaos'),
  })
  const { options } = run
  run.log(
    `chaos: ${options.count} delegations, ${options.hosted} hosted sessions, ${options.clients} clients, ${options.workers} workers; ` +
      `db ${databaseName(run.databaseUrl)}, ` +
      `${options.cluster ? `a Redis Cluster, ${CLUSTER_PARTITIONS} partitions` : `redis db ${run.redisDb}`}, prefix ${run.prefix}, ` +
      `port ${run.port}; logs in ${run.logDir}`,
  )
  const redis = new Redis(run.redisUrl, { maxRetriesPerRequest: 3 })
  redis.on('error', () => undefined)
  await redis.flushdb()

  // The subagents' specs, script and workspace, and the witness file, next to the process logs.
  const subagentDirs = await writeRemembererDirs(join(run.logDir, REMEMBERER))
  const witnessFile = await writeWitnessSpec(subagentDirs.SUBAGENTS_DIR, run.logDir)
  const hostedEnv = await writeChaosProfiles(run.logDir, subagentDirs.SCRIPTED_MODELS_DIR)
  // Every process of the fleet reaches Postgres, and one Redis, through a fault proxy; this
  // script's own clients (audit, faults) reach them directly. A cluster's nodes are reached
  // directly by everyone.
  const pgProxy = await startFaultProxy(run.databaseUrl)
  const cluster = options.cluster ? await startRedisCluster() : undefined
  const chaosRedis: ChaosRedis =
    cluster === undefined
      ? { kind: 'one', client: redis, proxy: await startFaultProxy(run.redisUrl) }
      : { kind: 'cluster', cluster }
  const redisEnv =
    chaosRedis.kind === 'one'
      ? { REDIS_URL: chaosRedis.proxy.url }
      : {
          REDIS_CLUSTER_NODES: chaosRedis.cluster.nodeList,
          QUEUE_PARTITIONS: String(CLUSTER_PARTITIONS),
        }
  const env = {
    ...subagentDirs,
    ...hostedEnv,
    DATABASE_URL: pgProxy.url,
    ...redisEnv,
    QUEUE_PREFIX: run.prefix,
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: String(run.port),
    LEASE_TTL_MS: '3000',
    HEARTBEAT_INTERVAL_MS: '500',
    RECONCILE_INTERVAL_MS: '500',
    REQUEUE_AFTER_MS: '2000',
    WORKER_CONCURRENCY: '100',
    ...WEBHOOK_ENV,
  }
  const fleet = new Fleet({
    env,
    logDir: run.logDir,
    verbose: options.verbose,
    workers: options.workers,
    onNote: (note) => run.note(note),
    onCrash: (c) =>
      run.note(`CRASH: ${c.name} exited (${String(c.code)}) unasked: ${c.reason}; restarting it`),
  })
  const killOnExit = (): void => fleet.killRemaining()
  process.once('exit', killOnExit)
  const onSignal = (): void => {
    fleet.killRemaining()
    // Best effort: leave the chaos Redis database empty, but never hang on the way out.
    setTimeout(() => process.exit(130), 2_000).unref()
    void Promise.all([redis.flushdb(), cluster?.close()]).finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)

  const db = createDb({
    connectionString: run.databaseUrl,
    maxConnections: 2,
    applicationName: 'baton-chaos',
  })
  let push: PushDelivery | undefined
  try {
    await fleet.start()
    push = await startPushDelivery(run)
    run.note(`API and ${options.workers} workers ready; submitting`)

    // Submission and faults run together; faults continue until submission ends and every
    // kind has fired at least once.
    const submitStarted = performance.now()
    run.submitDeadline = AbortSignal.timeout(options.submitTimeoutMs)
    const followUpsEnd = new AbortController()
    run.followUpDeadline = followUpsEnd.signal
    let submissionDone = false
    const progress = setInterval(() => {
      run.note(
        `submitted ${run.submitted.size}/${options.count}, hosted runs ${run.stats.hosted.runs}, ` +
          `follow-ups pending ${run.followUps.size}, ` +
          `connection errors ${run.stats.postConnectionErrors}, faults ${JSON.stringify(run.faults)}`,
      )
    }, 5_000)
    const faultsDone = faultLoop(run, fleet, { pgProxy, redis: chaosRedis }, () => submissionDone)
    const parents = createParentRuns(run, (sessionId) => push?.isPushed(sessionId) === true)
    await Promise.all([submitWorkload(run, parents), submitHosted(run)])
    submissionDone = true
    const submitSeconds = (performance.now() - submitStarted) / 1000
    run.note(`submission ended: ${run.submitted.size} accepted in ${submitSeconds.toFixed(1)}s`)
    await faultsDone
    run.note(`faults ended: ${JSON.stringify(run.faults)}`)
    // Follow-ups (cancels, steers, continuations) retry through every fault; once the last one
    // has fired they go on while attempts keep ending (the backlog drains at the machine's pace),
    // and give up once none has ended for one quiescence timeout.
    const stopWatching = abortWhenStalled(run, db, followUpsEnd)
    await settleFollowUps(run)
    stopWatching()
    clearInterval(progress)
    run.note('follow-ups (cancel, steer, continue) settled; waiting for quiescence')

    const quiesceStarted = performance.now()
    let open = await waitForQuiescence(run, db)
    await settleFollowUps(run)
    const hostedOpen = await waitForHostedRuns(run, db)
    // A continuation run's attempt may have been running: the ledger settles once more.
    if (open === 0) open = await waitForQuiescence(run, db)
    const finished = await parents.finish()
    run.note(
      `parent runs completed: ${finished.parents}; continuations consumed: ${finished.consumed}`,
    )
    const quiesceSeconds = (performance.now() - quiesceStarted) / 1000
    run.note(
      `${open === 0 ? 'quiescent' : `NOT quiescent (${open} open)`} after ${quiesceSeconds.toFixed(1)}s; auditing`,
    )
    const a = await audit(run, db, witnessFile)
    const webhooks = await push.audit(db)
    const summary = summarize(run, a, webhooks, hostedOpen)
    const failures = failuresOf(run, summary, fleet.crashes)
    printTables(run, summary, a, fleet.crashes)
    if (webhooks.samples.length > 0) {
      run.log('webhook events the receiver never processed (first 10):')
      for (const id of webhooks.samples) run.log(`  ${id}`)
    }
    run.log('')
    run.log(
      `elapsed ${run.elapsed()} (submission ${submitSeconds.toFixed(1)}s, quiescence ${quiesceSeconds.toFixed(1)}s); ` +
        `process logs: ${run.logDir}`,
    )
    printDetails(run, a, fleet.crashes)
    run.log(failures.length === 0 ? 'chaos: PASS' : `chaos: FAIL: ${failures.join('; ')}`)
    if (options.json) console.log(JSON.stringify(summary))
    return failures.length === 0 ? 0 : 1
  } finally {
    await push?.close().catch(() => undefined)
    pgProxy.resume()
    if (chaosRedis.kind === 'one') chaosRedis.proxy.resume()
    for (const node of cluster?.nodes ?? []) node.resume()
    await fleet.stopAll().catch(() => undefined)
    await pgProxy.close()
    if (chaosRedis.kind === 'one') await chaosRedis.proxy.close()
    await cluster?.close()
    await redis.flushdb().catch(() => undefined)
    redis.disconnect()
    await db.destroy().catch(() => undefined)
  }
}

let code = 1
try {
  code = await main()
} catch (error) {
  console.error('chaos: error:', error)
}
// Library handles (ioredis reconnect timers, keep-alive sockets) must not keep a finished run alive.
process.exit(code)
