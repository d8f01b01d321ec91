// `npm run bench -- --scale`: how Baton's cost grows with the work, on one stack (an API and
// `--workers` workers as processes, the bench's private Redis, a fresh database):
//   concurrency: hanging children ramped to each level and held; what keeping them alive costs
//                per second, worker memory per child, the renewals' time and the leases' closest
//                approach to expiry (the workers' own metrics), and cancel → aborted while all run;
//   waits:       one bounded wait open on each of a level's children: API memory and descriptors
//                per wait, Redis clients, then all cancelled together: commit → answer;
//   history:     terminal attempts written with SQL up to each size; the cost of a delegation
//                (claim, commit, wait), the reconciler's pass, the dashboard and `/metrics`;
//   retention:   expired history written beside it and drained by the reconcilers: claims and
//                submit-and-waits before and during, nothing younger removed (scale-retention.ts).
// See docs/performance.md, "Cost as the work grows".
import { setTimeout as sleep } from 'node:timers/promises'
import type { BenchContext } from './context.ts'
import { measureCost } from './counters.ts'
import { profileEnv } from './cpu-profile.ts'
import { sequentialWaits } from './http-load.ts'
import type { ScaleOptions } from './options.ts'
import { growHistory } from './scale-history.ts'
import { retentionDrain } from './scale-retention.ts'
import {
  connectedClients,
  histogramDelta,
  lowestBound,
  openFds,
  quantileBound,
  readHistogram,
  readValue,
  residentKib,
} from './scale-probes.ts'
import {
  SCALE_DATABASE,
  adminHeaders,
  cancelAtOnce,
  cancelOne,
  inParallel,
  p,
  rampTo,
  withScaleStack,
  type ScaleStack,
} from './scale-stack.ts'
import { median, round } from './stats.ts'

export type ScaleFigures = Record<string, number | null>

export interface ScaleResult {
  readonly concurrency: ScaleFigures[]
  readonly waits: ScaleFigures[]
  readonly history: ScaleFigures[]
  /** Claims and submit-and-waits before and while ledger retention drains expired history. */
  readonly retention: ScaleFigures[]
}

type Log = (line: string) => void

const scrape = async (url: string): Promise<string> => (await fetch(url)).text()
const scrapeWorkers = (stack: ScaleStack): Promise<string[]> =>
  Promise.all(stack.workerMetricsUrls.map(scrape))
const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0)
const kib = (pids: readonly number[]): number => sum(pids.map(residentKib))

/** Committed plus rolled-back transactions of the bench's database so far (statistics view). */
async function transactions(bench: BenchContext): Promise<number> {
  const r = await bench.postgres.admin.query<{ n: string | null }>(
    `select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = $1`,
    [SCALE_DATABASE],
  )
  return Number(r.rows[0]?.n ?? 0)
}

/** The difference of one worker histogram between two scrapes of every worker. */
function workerHistogram(before: readonly string[], after: readonly string[], name: string) {
  return histogramDelta(
    after.map((text, i) => ({
      before: readHistogram(before[i] ?? '', name),
      after: readHistogram(text, name),
    })),
  )
}

async function concurrency(
  bench: BenchContext,
  stack: ScaleStack,
  options: ScaleOptions,
  log: Log,
): Promise<ScaleFigures[]> {
  const workerPids = stack.workers.map((w) => w.pid)
  const nodePids = [stack.api.pid, ...workerPids]
  const idleKib = kib(workerPids)
  const rows: ScaleFigures[] = []
  for (const level of options.levels) {
    const before = await scrapeWorkers(stack)
    await rampTo(stack, level)
    log(`bench: ${level} children running; holding them ${options.holdMs} ms`)
    const xactsBefore = await transactions(bench)
    const window = await measureCost(bench, nodePids, SCALE_DATABASE, async () => {
      const started = performance.now()
      await sleep(options.holdMs)
      return (performance.now() - started) / 1000
    })
    const xacts = (await transactions(bench)) - xactsBefore
    const after = await scrapeWorkers(stack)
    const heldKib = kib(workerPids)
    const seconds = window.result
    const renewal = workerHistogram(before, after, 'baton_lease_renewal_seconds')
    const remaining = workerHistogram(before, after, 'baton_lease_remaining_seconds')
    const renewed =
      sum(after.map((t) => readValue(t, 'baton_lease_renewals_total'))) -
      sum(before.map((t) => readValue(t, 'baton_lease_renewals_total')))
    const { cost } = window
    const cpuMsPerS = (cost.nodeCpuMs + cost.redisCpuMs + (cost.postgresCpuMs ?? 0)) / seconds
    const cancels = await cancelAtOnce(
      stack,
      stack.running.slice(-Math.min(options.cancels, level)),
    )
    rows.push({
      children: level,
      held_s: round(seconds, 1),
      pg_xacts_per_s: round(xacts / seconds, 1),
      renewal_statements_per_s: round(renewal.count / seconds, 2),
      leases_renewed_per_s: round(renewed / seconds, 1),
      cpu_ms_per_s: round(cpuMsPerS, 1),
      node_cpu_ms_per_s: round(cost.nodeCpuMs / seconds, 1),
      redis_cpu_ms_per_s: round(cost.redisCpuMs / seconds, 1),
      pg_cpu_ms_per_s: round((cost.postgresCpuMs ?? 0) / seconds, 1),
      cpu_ms_per_s_per_1k_children: round((cpuMsPerS * 1000) / level, 2),
      worker_rss_mib: round(heldKib / 1024, 1),
      worker_rss_kib_per_child: round((heldKib - idleKib) / level, 1),
      renewal_p99_s_at_most: quantileBound(renewal, 0.99) ?? null,
      renewal_mean_ms: renewal.count === 0 ? null : round((renewal.sum / renewal.count) * 1000, 1),
      lease_closest_remaining_s_at_most: lowestBound(remaining) ?? null,
      cancelled_at_once: cancels.cancel.length,
      cancel_p50_ms: p(cancels.cancel, 50),
      cancel_p99_ms: p(cancels.cancel, 99),
      not_aborted: cancels.notAborted,
    })
    log(`bench: concurrency ${JSON.stringify(rows.at(-1))}`)
  }
  return rows
}

async function waits(
  bench: BenchContext,
  stack: ScaleStack,
  options: ScaleOptions,
  log: Log,
): Promise<ScaleFigures[]> {
  const rows: ScaleFigures[] = []
  for (const level of options.levels) {
    await rampTo(stack, level)
    const ids = stack.running.slice(0, level)
    const apiKib = residentKib(stack.api.pid)
    const apiFds = openFds(stack.api.pid)
    const redisClients = connectedClients(await bench.redis.info('clients'))
    let open = { apiKib, apiFds, redisClients }
    log(`bench: ${level} waits opening`)
    const answered = await cancelAtOnce(stack, ids, async () => {
      open = {
        apiKib: residentKib(stack.api.pid),
        apiFds: openFds(stack.api.pid),
        redisClients: connectedClients(await bench.redis.info('clients')),
      }
    })
    rows.push({
      open_waits: level,
      api_rss_kib_per_wait: round((open.apiKib - apiKib) / level, 2),
      api_fds_before: apiFds,
      api_fds_open: open.apiFds,
      redis_clients_before: redisClients,
      redis_clients_open: open.redisClients,
      commit_to_answer_p50_ms: p(answered.commit, 50),
      commit_to_answer_p99_ms: p(answered.commit, 99),
      cancel_to_answer_p50_ms: p(answered.cancel, 50),
      cancel_to_answer_p99_ms: p(answered.cancel, 99),
      not_aborted: answered.notAborted,
    })
    log(`bench: waits ${JSON.stringify(rows.at(-1))}`)
  }
  return rows
}

/** `n` timed calls of `call` one after another: the median and the slowest, in ms. */
async function timed(n: number, call: () => Promise<void>): Promise<{ p50: number; max: number }> {
  const ms: number[] = []
  for (let i = 0; i < n; i += 1) {
    const started = performance.now()
    await call()
    ms.push(performance.now() - started)
  }
  return { p50: round(median(ms), 1), max: round(Math.max(...ms), 1) }
}

async function ok(response: Promise<Response>): Promise<void> {
  const answer = await response
  await answer.arrayBuffer()
  if (!answer.ok) throw new Error(`${answer.url} answered ${answer.status}`)
}

async function history(
  bench: BenchContext,
  stack: ScaleStack,
  options: ScaleOptions,
  log: Log,
): Promise<ScaleFigures[]> {
  // Nothing left running from the other dimensions: this one measures history alone.
  await inParallel(stack.running.splice(0), 64, (id) => cancelOne(stack, id))
  const rows: ScaleFigures[] = []
  let written = 0
  for (const size of options.history) {
    const started = performance.now()
    await growHistory(stack.pool, written, size, log)
    const writeS = (performance.now() - started) / 1000
    written = size
    const accepted: string[] = []
    await sequentialWaits(stack.client, 20, accepted)
    const before = await scrapeWorkers(stack)
    const phaseFrom = process.hrtime.bigint()
    const phase = await measureCost(
      bench,
      [stack.api.pid, ...stack.workers.map((w) => w.pid)],
      SCALE_DATABASE,
      () => sequentialWaits(stack.client, options.sequential, accepted),
    )
    if (profileEnv().NODE_OPTIONS !== undefined)
      // The window of the apps' CPU profiles that this level's delegations ran in (see cancel bursts).
      log(
        `bench: history ${size} delegations monotonic_us ${phaseFrom / 1000n} ${process.hrtime.bigint() / 1000n}`,
      )
    // At least two reconciler passes per worker in the window.
    const passesWanted = stack.workers.length * 2
    let after = await scrapeWorkers(stack)
    for (let i = 0; i < 100; i += 1) {
      if (workerHistogram(before, after, 'baton_reconcile_pass_seconds').count >= passesWanted)
        break
      await sleep(200)
      after = await scrapeWorkers(stack)
    }
    const passes = workerHistogram(before, after, 'baton_reconcile_pass_seconds')
    const admin = adminHeaders(stack)
    const overview = await timed(5, () =>
      ok(fetch(`${stack.baseUrl}/admin/api/overview`, { headers: admin })),
    )
    const apiMetrics = await timed(5, () =>
      ok(fetch(`${stack.baseUrl}/metrics`, { headers: admin })),
    )
    const workerMetrics = await timed(5, () => ok(fetch(stack.workerMetricsUrls[0] ?? '')))
    const latencies = phase.result
    rows.push({
      terminal_attempts: size,
      history_write_s: round(writeS, 1),
      wait_p50_ms: p(latencies, 50),
      wait_p99_ms: p(latencies, 99),
      cpu_ms_per_delegation: round(
        (phase.cost.nodeCpuMs + phase.cost.redisCpuMs + (phase.cost.postgresCpuMs ?? 0)) /
          options.sequential,
        3,
      ),
      // Its parts: the API's and workers' Node, the database's own backends, the server's shared
      // processes (a checkpoint still flushing the written history lands here).
      node_cpu_ms_per_delegation: round(phase.cost.nodeCpuMs / options.sequential, 3),
      pg_backend_cpu_ms_per_delegation: round(
        ((phase.cost.postgresCpuMs ?? 0) - (phase.cost.postgresServerCpuMs ?? 0)) /
          options.sequential,
        3,
      ),
      pg_server_cpu_ms_per_delegation: round(
        (phase.cost.postgresServerCpuMs ?? 0) / options.sequential,
        3,
      ),
      reconcile_pass_mean_ms:
        passes.count === 0 ? null : round((passes.sum / passes.count) * 1000, 1),
      reconcile_pass_p99_s_at_most: quantileBound(passes, 0.99) ?? null,
      dashboard_overview_p50_ms: overview.p50,
      dashboard_overview_max_ms: overview.max,
      api_metrics_p50_ms: apiMetrics.p50,
      worker_metrics_p50_ms: workerMetrics.p50,
    })
    log(`bench: history ${JSON.stringify(rows.at(-1))}`)
  }
  return rows
}

export async function runScale(
  bench: BenchContext,
  options: ScaleOptions,
  log: Log,
): Promise<ScaleResult> {
  return withScaleStack(bench, options, async (stack) => {
    const has = (d: ScaleOptions['dimensions'][number]) => options.dimensions.includes(d)
    const concurrencyRows = has('concurrency') ? await concurrency(bench, stack, options, log) : []
    const waitRows = has('waits') ? await waits(bench, stack, options, log) : []
    const historyRows = has('history') ? await history(bench, stack, options, log) : []
    // Beside the largest history level, if there was one.
    const written = historyRows.at(-1)?.terminal_attempts ?? 0
    const retentionRows = has('retention') ? await retentionDrain(stack, options, written, log) : []
    return {
      concurrency: concurrencyRows,
      waits: waitRows,
      history: historyRows,
      retention: retentionRows,
    }
  })
}
