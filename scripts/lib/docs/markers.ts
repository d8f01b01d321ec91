// The checks that stand in for running a shell block that cannot run as such in a test: the
// command that started the system under test, the command CI runs, Docker Compose (no Docker
// engine runs here) and the bench (`npm test` runs no bench phase). Each check reads the block's commands and answers what is wrong, if anything.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { REPO_ROOT } from '@baton/testing/processes'
import { API_CONFIG_VARIABLES, loadConfig as loadApiConfig } from '../../../apps/api/src/config.ts'
import {
  WORKER_CONFIG_VARIABLES,
  loadConfig as loadWorkerConfig,
} from '../../../apps/worker/src/config.ts'
import { parseBenchCommand } from '../bench/options.ts'
import type { Marker } from './blocks.ts'

/**
 * A shell block's commands: comments and blank lines dropped, `\`-continued lines joined, each
 * command trimmed. (Comments are recognised at a line's start or after whitespace, outside quotes
 * only approximately — enough for the one-line commands these blocks hold.)
 */
export function shellCommands(body: string): string[] {
  const joined = body.replace(/\\\n\s*/g, ' ')
  return joined
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line !== '')
}

/** What is wrong with a marked block, one line each; empty when its check passes. */
export function checkMarkedBlock(marker: Marker, body: string): string[] {
  const commands = shellCommands(body)
  if (commands.length === 0) return ['a marked block holds no command']
  switch (marker) {
    case 'up':
      return commands.flatMap(checkUpCommand)
    case 'ci':
      return commands.flatMap(checkCiCommand)
    case 'compose':
      return commands.flatMap(checkComposeCommand)
    case 'bench':
      return commands.flatMap(checkBenchCommand)
    default: {
      const unknown: never = marker
      return [`unknown marker ${String(unknown)}`]
    }
  }
}

const ASSIGNMENT = /^([A-Z][A-Z0-9_]*)=(\S*)$/

/**
 * `up`: `npm run up`, optionally after variable assignments. The docs test started the live
 * system with exactly `npm run up`; each variable must be one up reads (`env.NAME` in its
 * sources) or one the API or worker reads, with a value their configuration accepts.
 */
function checkUpCommand(command: string): string[] {
  const words = command.split(/\s+/)
  const tail = words.slice(-3).join(' ')
  if (tail !== 'npm run up') return [`"${command}" is not npm run up`]
  const problems: string[] = []
  for (const word of words.slice(0, -3)) {
    const assignment = ASSIGNMENT.exec(word)
    if (assignment === null) {
      problems.push(`"${word}" in "${command}" is not a VARIABLE=value assignment`)
      continue
    }
    const [, name = '', value = ''] = assignment
    problems.push(...checkUpVariable(name, value))
  }
  return problems
}

const UP_SOURCES = [
  'scripts/up.ts',
  'scripts/lib/services.ts',
  'scripts/lib/dev-service.ts',
  'scripts/lib/dev-postgres.ts',
  'scripts/lib/dev-redis.ts',
]

function checkUpVariable(name: string, value: string): string[] {
  const problems: string[] = []
  const readByUp = UP_SOURCES.some((file) =>
    readFileSync(join(REPO_ROOT, file), 'utf8').includes(`env.${name}`),
  )
  const readByApi = API_CONFIG_VARIABLES.includes(name)
  const readByWorker = WORKER_CONFIG_VARIABLES.includes(name)
  if (!readByUp && !readByApi && !readByWorker)
    return [`${name} is read neither by npm run up nor by the API or the worker`]
  const attempts: [boolean, (env: Record<string, string>) => unknown][] = [
    [readByApi, loadApiConfig],
    [readByWorker, loadWorkerConfig],
  ]
  for (const [reads, load] of attempts) {
    if (!reads) continue
    try {
      load({ [name]: value })
    } catch (error) {
      problems.push(`${name}=${value}: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  return problems
}

/** `ci`: a command `.ci/run` runs verbatim (continuation lines joined as in the block). */
function checkCiCommand(command: string): string[] {
  const ciCommands = shellCommands(readFileSync(join(REPO_ROOT, '.ci/run'), 'utf8'))
  return ciCommands.includes(command) ? [] : [`.ci/run does not run "${command}"`]
}

const COMPOSE_FILE = 'infra/docker-compose.yml'
const COMPOSE_PREFIX = `docker compose -f ${COMPOSE_FILE} `
/** Subcommands whose other words are service names (after options). */
const COMPOSE_SUBCOMMANDS = ['up', 'down', 'logs', 'ps', 'stop', 'restart', 'build', 'pull']
/** Options of those subcommands that take a value in the next word. */
const OPTIONS_WITH_VALUE = new Set(['--scale', '--tail', '--timeout', '-t'])

/**
 * `compose`: `docker compose -f infra/docker-compose.yml <subcommand> [options] [services]` naming
 * only services of that file (`--scale NAME=N` too), or `export NAME=…` of a variable the file
 * interpolates (`${NAME…}`).
 */
function checkComposeCommand(command: string): string[] {
  const text = readFileSync(join(REPO_ROOT, COMPOSE_FILE), 'utf8')
  const exported = /^export ([A-Z][A-Z0-9_]*)=/.exec(command)
  if (exported !== null) {
    const name = exported[1] ?? ''
    return text.includes(`\${${name}`) ? [] : [`${COMPOSE_FILE} does not read ${name}`]
  }
  if (!command.startsWith(COMPOSE_PREFIX)) return [`"${command}" is not ${COMPOSE_PREFIX}…`]
  const services = Object.keys(
    (parseYaml(text, { merge: true }) as { services: Record<string, unknown> }).services,
  )
  const [subcommand = '', ...rest] = command.slice(COMPOSE_PREFIX.length).split(/\s+/)
  if (!COMPOSE_SUBCOMMANDS.includes(subcommand))
    return [`"${subcommand}" is not a compose subcommand the docs runner knows`]
  const problems: string[] = []
  const named = (service: string): void => {
    if (!services.includes(service))
      problems.push(`${COMPOSE_FILE} has no service "${service}" (it has ${services.join(', ')})`)
  }
  for (let i = 0; i < rest.length; i += 1) {
    const word = rest[i] ?? ''
    if (OPTIONS_WITH_VALUE.has(word)) {
      if (word === '--scale') named((rest[i + 1] ?? '').split('=')[0] ?? '')
      i += 1
    } else if (!word.startsWith('-')) named(word)
  }
  return problems
}

const BENCH = /^npm run (?:-s )?bench(?: -- (.*))?$/

/** `bench`: `npm run [-s] bench [-- options]` whose options the bench itself accepts. */
function checkBenchCommand(command: string): string[] {
  const match = BENCH.exec(command)
  if (match === null) return [`"${command}" is not npm run bench`]
  try {
    parseBenchCommand((match[1] ?? '').split(/\s+/).filter((word) => word !== ''))
    return []
  } catch (error) {
    return [`"${command}": ${error instanceof Error ? error.message : String(error)}`]
  }
}
