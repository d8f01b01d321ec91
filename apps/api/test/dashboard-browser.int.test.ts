// The ledger dashboard in Chromium, however the browser was given the admin key: in the URL, at
// its Basic prompt, or in a header a proxy adds; its tables and its charts of the last hour fill
// from a real API over a real ledger, and a wrong key gets nothing.
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decode, type DecodedPng } from 'fast-png'
import type { BrowserContext, Page } from 'playwright-core'
import { sql } from 'kysely'
import { claimAttempt, commitTerminal, type Db } from '@baton/store'
import { DEMO_PROFILES_ENV, describe, expect, runDemoSession } from '@baton/testing'
import { apiTest, delegate, type ApiHarness } from './support/api-harness.ts'
import { launchChromium } from './chromium.ts'

const ADMIN_KEY = 'dashboard-admin-key-0123456789abcdefghij'
/** Far beyond what the page needs on an idle machine (one refresh: a few hundred ms). */
const FILL_TIMEOUT_MS = 20_000

const browserTest = apiTest.extend<{
  adminApi: ApiHarness
  browser: Awaited<ReturnType<typeof launchChromium>>
}>({
  adminApi: async ({ inProcessApi }, use) => use(await inProcessApi({ ADMIN_API_KEY: ADMIN_KEY })),
  browser: async ({ track }, use) => {
    const browser = track(await launchChromium())
    await use(browser)
    await browser.close()
  },
})

/**
 * The page at `url` in `context`, with every answer it got (path and status). `status` is the
 * page's own answer, or undefined when the browser refused to show one (credentials in the URL
 * that the server refuses end the navigation with an error of the browser's).
 */
async function open(context: BrowserContext, url: string) {
  const page = await context.newPage()
  const answers: { path: string; status: number }[] = []
  page.on('response', (response) => {
    answers.push({ path: new URL(response.url()).pathname, status: response.status() })
  })
  const response = await page.goto(url).catch((error: unknown) => {
    if (error instanceof Error && error.message.includes('ERR_INVALID_AUTH_CREDENTIALS')) {
      return null
    }
    throw error
  })
  return { page, answers, status: response?.status() }
}

/**
 * Waits until the page has refreshed `count` times with data, and holds every answer it got to
 * 200: the key it was given reaches each of its requests, not only the first ones (a browser
 * drops a key it holds for an origin when a request of that origin is refused).
 */
async function keepsRefreshing(
  answers: readonly { path: string; status: number }[],
  count: number,
  what: string,
): Promise<void> {
  const refreshed = () =>
    answers.filter((a) => a.path === '/admin/api/overview' && a.status === 200).length
  await expect.poll(refreshed, { timeout: FILL_TIMEOUT_MS }).toBeGreaterThanOrEqual(count)
  expect(
    answers.filter((a) => a.status !== 200),
    what,
  ).toEqual([])
}

interface Seeded {
  readonly queued: string[]
  readonly running: string[]
  readonly terminal: { readonly attemptId: string; readonly stopReason: string }[]
}

/**
 * Delegations through the API; this test is their worker (no worker process runs), so every fact
 * the page shows is one it wrote: `queued` stay accepted, `running` are claimed, the rest are
 * claimed and finish with their stop reason.
 */
async function seed(
  api: ApiHarness,
  db: Db,
  counts: { queued: number; running: number; terminal: string[] },
): Promise<Seeded> {
  const accept = async (session: string) => {
    const accepted = await api.post(delegate(session), { name: 'scripted', prompt: 'x' })
    expect(accepted.status).toBe(202)
    return accepted.body.attemptId as string
  }
  const claim = async (attemptId: string) => {
    const claimed = await claimAttempt(db, {
      attemptId,
      ownerId: 'dash-owner',
      leaseTtlMs: 300_000,
    })
    if (claimed.kind !== 'claimed') throw new Error(`claim was ${claimed.kind}`)
    return claimed.attempt.ownerGeneration
  }
  const tag = Math.random().toString(36).slice(2, 8)
  const queued: string[] = []
  for (let i = 0; i < counts.queued; i++) queued.push(await accept(`s-q-${tag}-${i}`))
  const running: string[] = []
  for (let i = 0; i < counts.running; i++) {
    const attemptId = await accept(`s-r-${tag}-${i}`)
    await claim(attemptId)
    running.push(attemptId)
  }
  const terminal: Seeded['terminal'] = []
  for (const [i, stopReason] of counts.terminal.entries()) {
    const attemptId = await accept(`s-t-${tag}-${i}`)
    const ownerGeneration = await claim(attemptId)
    const outcome = await commitTerminal(db, {
      attemptId,
      ownerId: 'dash-owner',
      ownerGeneration,
      result: {
        stopReason,
        output: 'done',
        failureCategory: stopReason === 'error' ? 'provider_fault' : null,
      },
    })
    expect(outcome).toBe('committed')
    terminal.push({ attemptId, stopReason })
  }
  return { queued, running, terminal }
}

/** The seeded attempts' times as the ledger holds them. */
async function ledgerTimes(db: Db, ids: readonly string[]) {
  return db
    .selectFrom('attempts')
    .select(['id', 'created_at', 'started_at', 'terminal_at', 'stop_reason'])
    .where('id', 'in', ids)
    .execute()
}

const minuteOf = (time: Date): string =>
  new Date(Math.floor(time.getTime() / 60_000) * 60_000).toISOString()

/** A chart's mark (bar or point) for one minute and series. */
const mark = (page: Page, chart: string, minute: string, series: string) =>
  page.locator(`#chart-${chart} .point[data-minute="${minute}"][data-series="${series}"]`)

/**
 * The wait chart's p50 and p99 points of `minute` hold the same value, and each is drawn where it
 * sits in its own colour: the p99 point does not hide the p50 one under it.
 */
async function bothPercentilesShow(page: Page, minute: string): Promise<void> {
  const p50 = mark(page, 'wait', minute, 'p50')
  const p99 = mark(page, 'wait', minute, 'p99')
  await p99.waitFor({ timeout: FILL_TIMEOUT_MS })
  expect(await p50.getAttribute('data-value')).toBe(await p99.getAttribute('data-value'))
  const dir = await mkdtemp(join(tmpdir(), 'baton-dashboard-'))
  const shot = join(dir, 'wait.png')
  await page.screenshot({ path: shot, fullPage: true })
  const png = decode(await readFile(shot))
  for (const [point, colour] of [
    [p50, '#1565c0'],
    [p99, '#ef6c00'],
  ] as const) {
    const found = await point.boundingBox()
    if (found === null) throw new Error('the point is not on the page')
    const around = {
      x: found.x - 3,
      y: found.y - 3,
      width: found.width + 6,
      height: found.height + 6,
    }
    expect(pixelsNear(png, around, colour), colour).toBeGreaterThan(8)
  }
}

/** Pixels of the screenshot within `box` (CSS pixels, scale 1) within `tolerance` of `hex`. */
function pixelsNear(
  png: DecodedPng,
  box: { x: number; y: number; width: number; height: number },
  hex: string,
  tolerance = 60,
): number {
  const target = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16))
  let count = 0
  for (let y = Math.floor(box.y); y < Math.min(png.height, box.y + box.height); y++) {
    for (let x = Math.floor(box.x); x < Math.min(png.width, box.x + box.width); x++) {
      const at = (y * png.width + x) * png.channels
      let distance = 0
      for (let c = 0; c < 3; c++) distance += Math.abs((png.data[at + c] ?? 0) - (target[c] ?? 0))
      if (distance <= tolerance) count++
    }
  }
  return count
}

describe('ledger dashboard in Chromium', () => {
  browserTest(
    'opened with the key in the URL, the tables show the seeded attempts and every chart draws their minute',
    { timeout: 90_000 },
    async ({ adminApi: api, browser, db }) => {
      const seeded = await seed(api, db, {
        queued: 3,
        running: 2,
        terminal: ['completed', 'completed', 'error'],
      })
      const terminalIds = seeded.terminal.map((t) => t.attemptId)
      const rows = await ledgerTimes(db, [...seeded.queued, ...seeded.running, ...terminalIds])
      // The last minute anything was seeded in: at its end (or now) all of it is in place.
      const seededMinute = minuteOf(
        new Date(
          Math.max(
            ...rows.flatMap((r) =>
              [r.created_at, r.started_at, r.terminal_at].map((t) => t?.getTime() ?? 0),
            ),
          ),
        ),
      )

      const context = await browser.newContext({ viewport: { width: 1400, height: 1800 } })
      const base = new URL(api.base)
      const { page, answers } = await open(context, `http://admin:${ADMIN_KEY}@${base.host}/admin`)

      // Refreshed without an error (a failed one says why here).
      await expect
        .poll(() => page.locator('#status').textContent(), { timeout: FILL_TIMEOUT_MS })
        .toMatch(/^refreshed /)
      // The tables: states, leases and terminals of the seeded attempts.
      for (const attemptId of seeded.running) {
        await page
          .locator(`#leases tr[data-attempt-id="${attemptId}"]`)
          .waitFor({ timeout: FILL_TIMEOUT_MS })
      }
      for (const { attemptId, stopReason } of seeded.terminal) {
        const row = page.locator(`#terminals tr[data-attempt-id="${attemptId}"]`)
        await row.waitFor({ timeout: FILL_TIMEOUT_MS })
        expect(await row.locator('.stop-reason').textContent()).toBe(stopReason)
      }
      const count = (status: string, stopReason?: string) =>
        page
          .locator(`#states tr[data-namespace="default"][data-status="${status}"]`)
          .filter({ hasText: stopReason ?? '—' })
          .locator('td.num')
          .textContent()
      expect(await count('accepted')).toBe('3')
      expect(await count('running')).toBe('2')
      expect(await count('terminal', 'completed')).toBe('2')
      expect(await count('terminal', 'error')).toBe('1')

      // Throughput: a bar per stop reason in each minute the seeded attempts finished.
      const finished = rows.filter((r) => r.terminal_at !== null)
      const perMinute = new Map<string, Map<string, number>>()
      for (const r of finished) {
        const minute = minuteOf(r.terminal_at as Date)
        const reasons = perMinute.get(minute) ?? new Map<string, number>()
        reasons.set(r.stop_reason as string, (reasons.get(r.stop_reason as string) ?? 0) + 1)
        perMinute.set(minute, reasons)
      }
      for (const [minute, reasons] of perMinute) {
        for (const [reason, n] of reasons) {
          const bar = mark(page, 'throughput', minute, reason)
          await bar.waitFor({ timeout: FILL_TIMEOUT_MS })
          expect(await bar.getAttribute('data-value')).toBe(String(n))
          expect(Number(await bar.getAttribute('height'))).toBeGreaterThan(0)
        }
        // Wait from accept to terminal: p50 and p99 within that minute's waits.
        const waits = finished
          .filter((r) => minuteOf(r.terminal_at as Date) === minute)
          .map((r) => (r.terminal_at as Date).getTime() - r.created_at.getTime())
        for (const series of ['p50', 'p99']) {
          const point = mark(page, 'wait', minute, series)
          await point.waitFor({ timeout: FILL_TIMEOUT_MS })
          const value = Number(await point.getAttribute('data-value'))
          expect(value).toBeGreaterThanOrEqual(Math.min(...waits) - 1)
          expect(value).toBeLessThanOrEqual(Math.max(...waits) + 1)
        }
      }
      // Queue depth and running children at the end of the seeded minute.
      const queued = mark(page, 'queued', seededMinute, 'queued')
      await queued.waitFor({ timeout: FILL_TIMEOUT_MS })
      expect(await queued.getAttribute('data-value')).toBe('3')
      const running = mark(page, 'running', seededMinute, 'running')
      await running.waitFor({ timeout: FILL_TIMEOUT_MS })
      expect(await running.getAttribute('data-value')).toBe('2')
      // An hour of minutes on each gauge, labelled axes and a legend on every chart.
      expect(await page.locator('#chart-queued .point').count()).toBe(60)
      for (const chart of ['throughput', 'queued', 'running', 'wait']) {
        const figure = page.locator(`#chart-${chart}`)
        expect(await figure.locator('svg text').allTextContents()).toContain('minute (UTC)')
        expect(await figure.locator('.legend span.swatch').count()).toBeGreaterThan(0)
      }
      expect(await page.locator('#chart-throughput .legend').textContent()).toMatch(
        /completed.*error/,
      )

      // Refresh after refresh, every request the page made was answered with data.
      await keepsRefreshing(answers, 3, 'key in the URL')
      expect(await page.locator('#status').textContent()).toMatch(/^refreshed /)
      // The browser asks for /favicon.ico on its own (here from a second tab): it is answered 404
      // without asking for a key, so the browser keeps the key and the page goes on refreshing.
      const icon = await page.context().newPage()
      expect((await icon.goto(`${new URL(page.url()).origin}/favicon.ico`))?.status()).toBe(404)
      await icon.close()
      const before = answers.filter((a) => a.path === '/admin/api/overview').length
      await keepsRefreshing(answers, before + 2, 'key in the URL, after /favicon.ico')
      // An attempt's timeline opens from its link, read the same way.
      const [first] = seeded.terminal
      if (first === undefined) throw new Error('nothing seeded')
      await page.locator(`#terminals tr[data-attempt-id="${first.attemptId}"] a`).click()
      await page
        .locator('#timeline-entries tr[data-kind="terminal"]')
        .waitFor({ timeout: FILL_TIMEOUT_MS })
      // No link on the page hands out the key.
      const links = await page
        .locator('a[href]')
        .evaluateAll((as) => as.map((a) => (a as unknown as { href: string }).href))
      expect(links.length).toBeGreaterThan(0)
      for (const link of links) expect(link).not.toContain(ADMIN_KEY)

      // The screenshot: each chart's data drawn in its own colour inside the chart's box.
      const dir = await mkdtemp(join(tmpdir(), 'baton-dashboard-'))
      const shot = join(dir, 'dashboard.png')
      await page.screenshot({ path: shot, fullPage: true })
      const png = decode(await readFile(shot))
      expect(png.width).toBe(1400)
      const box = async (chart: string) => {
        const found = await page.locator(`#chart-${chart} svg`).boundingBox()
        if (found === null) throw new Error(`chart ${chart} is not on the page`)
        return found
      }
      const colours = {
        completed: '#2e7d32',
        error: '#c62828',
        queued: '#1565c0',
        running: '#00897b',
        p50: '#1565c0',
        p99: '#ef6c00',
      }
      const throughput = await box('throughput')
      expect(pixelsNear(png, throughput, colours.completed)).toBeGreaterThan(40)
      expect(pixelsNear(png, throughput, colours.error)).toBeGreaterThan(20)
      const queueBox = await box('queued')
      expect(pixelsNear(png, queueBox, colours.queued)).toBeGreaterThan(200)
      const runningBox = await box('running')
      expect(pixelsNear(png, runningBox, colours.running)).toBeGreaterThan(200)
      const wait = await box('wait')
      expect(pixelsNear(png, wait, colours.p50)).toBeGreaterThan(8)
      expect(pixelsNear(png, wait, colours.p99)).toBeGreaterThan(8)
      // The check tells colours apart: nothing of the error red is drawn on the gauges.
      expect(pixelsNear(png, queueBox, colours.error)).toBe(0)
      expect(pixelsNear(png, runningBox, colours.error)).toBe(0)

      await context.close()
    },
  )

  browserTest(
    "the browser's Basic prompt and a proxy's Authorization header fill it as well",
    { timeout: 90_000 },
    async ({ adminApi: api, browser, db }) => {
      const seeded = await seed(api, db, { queued: 0, running: 0, terminal: ['completed'] })
      const [only] = seeded.terminal
      if (only === undefined) throw new Error('nothing seeded')
      // Moved 20 minutes back, it is the one terminal of its minute: that minute's p50 and p99
      // are the same wait, and the chart must still show both.
      await sql`update attempts
        set created_at = created_at - interval '20 minutes',
            started_at = started_at - interval '20 minutes',
            terminal_at = terminal_at - interval '20 minutes'
        where id = ${only.attemptId}::uuid`.execute(db)
      const [row] = await ledgerTimes(db, [only.attemptId])
      const minute = minuteOf(row?.terminal_at as Date)
      const ways = {
        prompt: { httpCredentials: { username: 'ops', password: ADMIN_KEY } },
        proxy: { extraHTTPHeaders: { authorization: `Bearer ${ADMIN_KEY}` } },
      }
      for (const [way, options] of Object.entries(ways)) {
        const context = await browser.newContext(options)
        const { page, answers, status } = await open(context, `${api.base}/admin`)
        expect(status, way).toBe(200)
        await page
          .locator(`#terminals tr[data-attempt-id="${only.attemptId}"]`)
          .waitFor({ timeout: FILL_TIMEOUT_MS })
        await mark(page, 'throughput', minute, 'completed').waitFor({ timeout: FILL_TIMEOUT_MS })
        await keepsRefreshing(answers, 2, way)
        if (way === 'prompt') await bothPercentilesShow(page, minute)
        await context.close()
      }
    },
  )

  browserTest(
    'a wrong key gets no data',
    { timeout: 90_000 },
    async ({ adminApi: api, browser, db }) => {
      const seeded = await seed(api, db, { queued: 1, running: 0, terminal: [] })
      const base = new URL(api.base)
      const ways = {
        url: { url: `http://admin:wrong-key@${base.host}/admin`, options: {} },
        prompt: {
          url: `${api.base}/admin`,
          options: { httpCredentials: { username: 'ops', password: 'wrong-key' } },
        },
        proxy: {
          url: `${api.base}/admin`,
          options: { extraHTTPHeaders: { authorization: 'Bearer wrong-key' } },
        },
      }
      for (const [way, { url, options }] of Object.entries(ways)) {
        const context = await browser.newContext(options)
        const { page, answers, status } = await open(context, url)
        // Refused: the error body, or no page at all but the browser's error for credentials the
        // server refused (Chromium's answer to a second Basic challenge without a prompt to show).
        expect([401, undefined], way).toContain(status)
        if (status === 401) {
          const text = await page.locator('body').innerText()
          expect(text, way).toContain('UNAUTHORIZED')
          expect(text, way).not.toContain('Baton ledger')
          expect(text, way).not.toContain(seeded.queued[0])
        }
        expect(
          answers.filter((a) => a.path.startsWith('/admin/api/')),
          way,
        ).toEqual([])
        await context.close()
      }
      // Nor does the JSON the page reads answer anything but the refusal.
      const refused = await fetch(`${api.base}/admin/api/overview`, {
        headers: { authorization: `Basic ${Buffer.from('ops:wrong-key').toString('base64')}` },
      })
      expect(refused.status).toBe(401)
      expect(Object.keys((await refused.json()) as object)).toEqual(['error'])
    },
  )

  browserTest(
    "the sessions view of a hosted session: its runs in admission order, each run's trigger and state, and the user run's two children",
    { timeout: 120_000 },
    async ({ baton, browser, db }) => {
      // A real API and worker on the demo profile: the parent delegates to two researchers and
      // ends its turn; each researcher's result comes back as a continuation run.
      const stack = await baton({ env: DEMO_PROFILES_ENV, apiEnv: { ADMIN_API_KEY: ADMIN_KEY } })
      const { sessionId, userRunId } = await runDemoSession(stack.client, db)
      const runs = await sql<{ id: string; trigger_type: string; cause_attempt_id: string | null }>`
        select id, trigger_type, cause_attempt_id from runs where session_id = ${sessionId}
        order by admission_seq`.execute(db)
      const children = await sql<{ id: string; agent_id: string }>`
        select id, agent_id from attempts where parent_run_id = ${userRunId}::uuid
        order by created_at, id`.execute(db)
      expect(children.rows).toHaveLength(2)

      const context = await browser.newContext({ viewport: { width: 1400, height: 1800 } })
      const base = new URL(stack.base)
      const { page, answers } = await open(context, `http://admin:${ADMIN_KEY}@${base.host}/admin`)
      // The session is listed; its link opens the sessions view.
      const listed = page.locator(`#sessions tr[data-session-id="${sessionId}"]`)
      await listed.waitFor({ timeout: FILL_TIMEOUT_MS })
      expect(await listed.textContent()).toContain('demo')
      await listed.locator('a').click()
      await expect
        .poll(() => page.locator('#session-runs tbody tr[data-run-id]').count(), {
          timeout: FILL_TIMEOUT_MS,
        })
        .toBe(3)
      expect(await page.locator('#session-id').textContent()).toBe(sessionId)

      // The rows, top to bottom: the ledger's admission order, each with its trigger and state.
      const rows = page.locator('#session-runs tbody tr[data-run-id]')
      const shown = []
      for (let i = 0; i < runs.rows.length; i += 1) {
        const tr = rows.nth(i)
        shown.push({
          runId: await tr.getAttribute('data-run-id'),
          position: await tr.locator('td.num').textContent(),
          trigger: (await tr.locator('td.trigger').textContent()) ?? '',
          state: await tr.locator('td.run-state').textContent(),
          children: await Promise.all(
            (await tr.locator('li.child').all()).map((li) => li.getAttribute('data-attempt-id')),
          ),
        })
      }
      expect(shown.map((r) => [r.position, r.runId, r.state])).toEqual(
        runs.rows.map((r, i) => [String(i + 1), r.id, 'completed']),
      )
      expect(shown.map((r) => r.trigger.split('result of')[0])).toEqual([
        'user',
        'async_subagent_result',
        'async_subagent_result',
      ])
      // The user run's children, each a link to its attempt; the continuations name the child
      // whose result each carries, and delegated nothing.
      expect(shown[0]?.children).toEqual(children.rows.map((c) => c.id))
      for (const [i, run] of runs.rows.entries()) {
        if (i === 0) continue
        expect(shown[i]?.children).toEqual([])
        expect(shown[i]?.trigger).toContain('result of researcher')
        expect(shown[i]?.trigger).toContain(run.cause_attempt_id ?? 'a cause')
      }
      const first = page.locator(`#session-runs tr[data-run-id="${userRunId}"]`)
      for (const child of children.rows) {
        const item = first.locator(`li.child[data-attempt-id="${child.id}"]`)
        expect(await item.getAttribute('data-agent-id')).toBe(child.agent_id)
        expect(await item.getAttribute('data-status')).toBe('terminal')
        expect(await item.locator('.child-name').textContent()).toBe('researcher')
        expect(await item.locator('.child-state').textContent()).toBe('terminal (completed)')
      }
      expect(answers.filter((a) => a.status !== 200)).toEqual([])
      await context.close()
    },
  )
})
