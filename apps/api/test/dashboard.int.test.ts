// The ledger dashboard as an operator sees it: the real page, served by a real API, in headless
// Chromium, over a real worker running a child that stays running until it is cancelled.
import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { REPO_ROOT } from '@baton/testing/processes'
import { describe, expect, test } from '@baton/testing'
import { delegate } from './support/api-harness.ts'

const ADMIN_KEY = 'dashboard-admin-key-0123456789abcdefghij'
/** Where CI's `apt-get install chromium` puts it; the first one that exists is used. */
const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser']
const SCREENSHOT = join(REPO_ROOT, 'test-results', 'dashboard.png')
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** The Chromium binary, or a failure that says how to get one: this test never skips. */
function chromiumPath(): string {
  const found = CHROMIUM_CANDIDATES.find((path) => existsSync(path))
  if (found === undefined) {
    throw new Error(
      `the dashboard test needs Chromium at one of ${CHROMIUM_CANDIDATES.join(', ')}: ` +
        'install it (apt-get install chromium)',
    )
  }
  return found
}

async function launchChromium(): Promise<
  Browser & { close(): Promise<void>; isClosed(): boolean }
> {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    // Root (containers, CI) cannot use Chromium's sandbox.
    args: ['--no-sandbox'],
  })
  return Object.assign(browser, { isClosed: () => !browser.isConnected() })
}

describe('ledger dashboard in a browser', () => {
  test('shows a running lease ticking, then the terminal state and timeline after a cancel', async ({
    baton,
    track,
    db,
  }) => {
    const api = await baton({
      apiEnv: { ADMIN_API_KEY: ADMIN_KEY },
      // Beats often; a lease long enough to outlast the page's 2 s between refreshes.
      workerEnv: { HEARTBEAT_INTERVAL_MS: '200', LEASE_TTL_MS: '6000' },
    })
    const browser = track(await launchChromium())
    const context = await browser.newContext({
      httpCredentials: { username: 'ops', password: ADMIN_KEY },
      viewport: { width: 1400, height: 1000 },
    })
    const page = await context.newPage()

    // A child that runs until it is cancelled.
    const accepted = await api.post(delegate('s-dashboard'), {
      name: 'scripted',
      prompt: '{"hang":true}',
    })
    expect(accepted.status).toBe(202)
    const attemptId = accepted.body.attemptId as string
    await api.untilRunning(attemptId)

    await page.goto(`${api.base}/admin`)
    const lease = page.locator(`#leases tr[data-attempt-id="${attemptId}"]`)
    await lease.waitFor({ timeout: 10_000 })
    // The owner and fence the ledger holds: the worker's id, first generation.
    const owned = await db
      .selectFrom('attempts')
      .select(['owner_id', 'owner_generation'])
      .where('id', '=', attemptId)
      .executeTakeFirstOrThrow()
    expect(owned.owner_id).toMatch(/\S/)
    expect(await lease.locator('.owner').textContent()).toBe(owned.owner_id)
    expect(await lease.locator('.generation').textContent()).toBe(String(owned.owner_generation))
    await expect
      .poll(() => lease.locator('td').nth(1).textContent(), { timeout: 5000 })
      .toContain('scripted')
    expect(await lease.locator('td').nth(2).textContent()).toBe('default')

    // The ages tick in the page between refreshes: with the server's answers held back, two
    // reads more than a tick apart still differ (time running and heartbeat age up, lease left
    // down).
    const leaseLeft = lease.locator('.lease-left')
    const heartbeatAge = lease.locator('.heartbeat-age')
    const runningFor = lease.locator('.running-for')
    const seconds = async (cell: typeof leaseLeft) =>
      Number.parseFloat((await cell.textContent()) ?? 'NaN')
    await expect.poll(() => leaseLeft.textContent(), { timeout: 5000 }).toMatch(/^\d+\.\d s$/)
    const overview = '**/admin/api/overview'
    await page.route(overview, (route) => route.abort())
    // Refreshes run one at a time: once one failed, none is in flight that could still land.
    await expect
      .poll(() => page.locator('#status').textContent(), { timeout: 5000 })
      .toMatch(/^refresh failed/)
    const firstLeft = await seconds(leaseLeft)
    const firstRunning = await seconds(runningFor)
    const firstBeat = await seconds(heartbeatAge)
    await page.waitForTimeout(1300)
    const secondLeft = await seconds(leaseLeft)
    const secondBeat = await seconds(heartbeatAge)
    expect(secondLeft).toBeLessThan(firstLeft)
    expect(await seconds(runningFor)).toBeGreaterThan(firstRunning)
    expect(secondBeat).toBeGreaterThan(firstBeat)
    // Refreshed again, the page shows the lease the worker's heartbeats renewed meanwhile.
    await page.unroute(overview)
    await expect.poll(() => seconds(leaseLeft), { timeout: 5000 }).toBeGreaterThan(secondLeft)
    // ...and the heartbeat that renewed it: a fresh one, far younger than the held-back age.
    await expect.poll(() => seconds(heartbeatAge), { timeout: 5000 }).toBeLessThan(secondBeat)
    expect(await leaseLeft.getAttribute('class')).not.toContain('late')
    await mkdir(join(REPO_ROOT, 'test-results'), { recursive: true })
    await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-running.png'), fullPage: true })

    // Ledger text is shown as text, never as markup.
    const markup = '<b id="injected">steered</b><script>window.injected = 1</script>'
    const steer = await api.post(`/v1/attempts/${attemptId}/steer`, { content: markup })
    expect(steer.status).toBe(202)
    const cancel = await api.post(`/v1/attempts/${attemptId}/cancel`, { reason: 'from the test' })
    expect(cancel).toMatchObject({ status: 202, body: { outcome: 'cancel_requested' } })
    const terminal = page.locator(`#terminals tr[data-attempt-id="${attemptId}"]`)
    await terminal.waitFor({ timeout: 10_000 })
    expect(await terminal.locator('.stop-reason').textContent()).toBe('aborted')
    await lease.waitFor({ state: 'detached', timeout: 5000 })

    // The timeline of the clicked attempt, with its queue job's link.
    await terminal.locator('a').first().click()
    const entries = page.locator('#timeline-entries tbody tr')
    await page.locator('#timeline-entries tr[data-kind="terminal"]').waitFor({ timeout: 5000 })
    expect(page.url()).toContain(`?attempt=${attemptId}`)
    expect(await page.locator('#timeline-id').textContent()).toBe(attemptId)
    const kinds: (string | null)[] = []
    for (let i = 0; i < (await entries.count()); i += 1) {
      kinds.push(await entries.nth(i).getAttribute('data-kind'))
    }
    expect(kinds).toEqual(expect.arrayContaining(['transition', 'cancel_requested', 'terminal']))
    expect(
      await page.locator('#timeline-entries tr[data-kind="terminal"]').textContent(),
    ).toContain('aborted')
    expect(
      await page.locator('#timeline-entries tr[data-kind="cancel_requested"]').textContent(),
    ).toContain('from the test')
    expect(
      await page.locator('#timeline-entries tr[data-kind="steering"]').textContent(),
    ).toContain(markup)
    expect(await page.locator('#injected').count()).toBe(0)
    expect(await page.evaluate('window.injected')).toBeUndefined()
    expect(await page.locator('#timeline-job').getAttribute('href')).toBe(
      `${api.base}/admin/queues/queue/attempts/${attemptId}`,
    )

    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    const png = await readFile(SCREENSHOT)
    expect(png.length).toBeGreaterThan(PNG_SIGNATURE.length)
    expect(png.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)).toBe(true)

    // Opened by its address, the page shows the attempt's timeline straight away.
    const direct = await context.newPage()
    await direct.goto(`${api.base}/admin/?attempt=${attemptId}`)
    await direct.locator('#timeline-entries tr[data-kind="terminal"]').waitFor({ timeout: 5000 })

    await context.close()
    await browser.close()
    await api.close()
  })
})
