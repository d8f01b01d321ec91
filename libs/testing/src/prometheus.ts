// Prometheus exposition in tests: `promtool check metrics` on a scrape, a small parser of the text
// format, and a free port for a process's metrics endpoint.
import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'

/** Where CI installs it (`apt-get install prometheus`); `PATH` is searched when it is not there. */
const PROMTOOL_PATHS = ['/usr/bin/promtool', 'promtool']

/**
 * Runs `promtool check metrics` with `text` on stdin. Resolves with its exit code and everything it
 * printed (lint problems are printed, exit 1). Rejects, saying how to install it, when promtool is
 * missing: a check that cannot run must fail, never pass.
 */
export async function promtoolCheck(text: string): Promise<{ code: number; output: string }> {
  let missing: unknown
  for (const command of PROMTOOL_PATHS) {
    try {
      return await runPromtool(command, text)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      missing = error
    }
  }
  throw new Error(
    'promtool is not installed (apt-get install prometheus): the metrics exposition cannot be checked',
    { cause: missing },
  )
}

function runPromtool(command: string, text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? -1, output }))
    child.stdin.on('error', () => undefined) // an early exit is reported through `close`
    child.stdin.end(text)
  })
}

/** One sample of a scrape: metric name, labels, value. */
export interface MetricSample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** Parses the Prometheus text format (0.0.4): every sample line; comments are skipped. */
export function parseExposition(text: string): MetricSample[] {
  return text.split('\n').flatMap((line) => {
    if (line.trim() === '' || line.startsWith('#')) return []
    const match = SAMPLE.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) {
      labels[name ?? ''] = (value ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
    }
    return [{ name: match[1] ?? '', labels, value: Number(match[3]) }]
  })
}

/**
 * The value of the sample named `name` whose labels are exactly `labels`, in a scrape's text;
 * 0 when there is none (a labelled counter appears only once it moved).
 */
export function sampleValue(
  text: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number {
  const wanted = Object.entries(labels).sort()
  const found = parseExposition(text).find(
    (s) =>
      s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === JSON.stringify(wanted),
  )
  return found?.value ?? 0
}

/** A TCP port free on 127.0.0.1 right now (for a process that must be told its port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}
