/**
 * A scripted ACP agent for tests, run as its own process: `node fixture-agent.ts [flags]`. Built on
 * the SDK's agent side over stdio. Not part of the library's exports.
 *
 * Flags: `--pid-file <path>` writes the pid once running; `--init-delay-ms <n>` stalls `initialize`;
 * `--stubborn` survives SIGTERM and stdin closing (only SIGKILL ends it).
 *
 * Prompts (first text block):
 *   hang            streams `hanging`, waits for session/cancel, streams ` cancelled-by-client`, stops `cancelled`
 *   ignore-cancel   streams `working`, waits for session/cancel, streams ` done anyway`, stops `end_turn`
 *   deaf            streams `deaf` and never answers, whatever it is sent (with `--stubborn`, only
 *                   SIGKILL ends it)
 *   crash           streams `crashing`, then exits the process with code 3
 *   cwd             answers `cwd:<the cwd session/new received>`
 *   permission      asks for permission, answers `permission:<outcome>[:<optionId>]`
 *   read <path>     asks the client for the file, answers `read:<content>` or `read-error:<code>`
 *   stop <reason>   answers `stopping` and ends with that ACP stop reason
 *   anything else   answers `echo: <text>` in two chunks, stop `end_turn`
 */
import { writeFileSync } from 'node:fs'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'

const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const at = argv.indexOf(name)
  return at === -1 ? undefined : argv[at + 1]
}

const pidFile = flag('--pid-file')
const initDelayMs = Number(flag('--init-delay-ms') ?? '0')
const stubborn = argv.includes('--stubborn')
if (stubborn) process.on('SIGTERM', () => undefined)
if (pidFile !== undefined) writeFileSync(pidFile, String(process.pid))

interface FixtureSession {
  readonly cwd: string
  cancel: AbortController
}
const sessions = new Map<string, FixtureSession>()
let nextSession = 0

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

async function say(client: acp.AgentContext, sessionId: string, text: string): Promise<void> {
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } },
  })
}

async function answer(
  client: acp.AgentContext,
  sessionId: string,
  session: FixtureSession,
  text: string,
): Promise<acp.StopReason> {
  if (text === 'hang') {
    await say(client, sessionId, 'hanging')
    const cancelled = session.cancel.signal
    if (!cancelled.aborted)
      await new Promise((resolve) => cancelled.addEventListener('abort', resolve, { once: true }))
    await say(client, sessionId, ' cancelled-by-client')
    return 'cancelled'
  }
  if (text === 'ignore-cancel') {
    await say(client, sessionId, 'working')
    const cancelled = session.cancel.signal
    if (!cancelled.aborted)
      await new Promise((resolve) => cancelled.addEventListener('abort', resolve, { once: true }))
    await say(client, sessionId, ' done anyway')
    return 'end_turn'
  }
  if (text === 'deaf') {
    await say(client, sessionId, 'deaf')
    return new Promise<acp.StopReason>(() => undefined)
  }
  if (text === 'crash') {
    await say(client, sessionId, 'crashing')
    process.exit(3)
  }
  if (text === 'cwd') {
    await say(client, sessionId, `cwd:${session.cwd}`)
    return 'end_turn'
  }
  if (text === 'permission') {
    const response = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: 'fixture-tool', title: 'delete everything' },
      options: [
        { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
        { optionId: 'deny', name: 'Deny', kind: 'reject_once' },
      ],
    })
    const outcome = response.outcome
    await say(
      client,
      sessionId,
      outcome.outcome === 'selected'
        ? `permission:selected:${outcome.optionId}`
        : 'permission:cancelled',
    )
    return 'end_turn'
  }
  if (text.startsWith('read ')) {
    try {
      const file = await client.request(acp.methods.client.fs.readTextFile, {
        sessionId,
        path: text.slice('read '.length),
      })
      await say(client, sessionId, `read:${file.content}`)
    } catch (error) {
      await say(
        client,
        sessionId,
        `read-error:${error instanceof acp.RequestError ? error.code : 'unknown'}`,
      )
    }
    return 'end_turn'
  }
  if (text.startsWith('stop ')) {
    await say(client, sessionId, 'stopping')
    return text.slice('stop '.length) as acp.StopReason
  }
  await say(client, sessionId, 'echo: ')
  await say(client, sessionId, text)
  return 'end_turn'
}

const app = acp
  .agent({ name: 'baton-acp-fixture' })
  .onRequest(acp.methods.agent.initialize, async () => {
    if (initDelayMs > 0) await sleep(initDelayMs)
    return { protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: {} }
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    nextSession += 1
    const sessionId = `fixture-${nextSession}`
    sessions.set(sessionId, { cwd: params.cwd, cancel: new AbortController() })
    return { sessionId }
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId)
    if (session === undefined) throw acp.RequestError.sessionNotFound(params.sessionId)
    session.cancel = new AbortController()
    const first = params.prompt[0]
    const text = first !== undefined && first.type === 'text' ? first.text : ''
    return { stopReason: await answer(client, params.sessionId, session, text) }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancel.abort()
  })

const connection = app.connect(
  acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  ),
)
// The client closing stdin ends the agent, as a real stdio agent would; a stubborn one lingers.
void connection.closed.then(() => {
  if (stubborn) setInterval(() => undefined, 60_000)
  else process.exit(0)
})
