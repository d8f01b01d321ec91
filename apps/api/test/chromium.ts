// Headless Chromium for the dashboard's browser tests: the system's own build, a fresh profile
// per launch (Playwright makes one), nothing fetched from elsewhere.
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'
import type { Closeable } from '@baton/testing'

/** Where Debian's and CI's `apt-get install chromium` put it; the first one that exists is used. */
const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser']

/**
 * Flags that keep a test's Chromium to itself: no sandbox (root in containers and CI cannot use
 * it), no GPU, and no traffic of its own (QUIC probes, component and sync updates).
 */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** Launches Chromium, or fails saying how to get it: a browser test never skips. */
export async function launchChromium(): Promise<Browser & Closeable> {
  const executablePath = CHROMIUM_CANDIDATES.find((path) => existsSync(path))
  if (executablePath === undefined) {
    throw new Error(
      `this test needs Chromium at one of ${CHROMIUM_CANDIDATES.join(', ')}: ` +
        'install it (apt-get install chromium)',
    )
  }
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS })
  return Object.assign(browser, { isClosed: () => !browser.isConnected() })
}
