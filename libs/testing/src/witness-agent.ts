/**
 * The child of the `witnessed` subagent (see witness.ts): an Agent Client Protocol agent run by
 * the worker as its own process (`node witness-agent.ts --witness <file> [--work-ms <n>]`). On
 * each prompt it first appends the prompt (the task token) to the witness file — outside the
 * ledger, so a child that runs twice is seen even when the ledger recorded one claim — then works
 * a random while (100 ms plus up to `--work-ms`, 700 unless given, so faults land mid-run),
 * honouring session/cancel, and answers `witnessed <token>`.
 */
import { appendFileSync } from 'node:fs'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'

const at = process.argv.indexOf('--witness')
const witnessFile = at === -1 ? undefined : process.argv[at + 1]
if (witnessFile === undefined)
  throw new Error('usage: witness-agent.ts --witness <file> [--work-ms <n>]')
const workAt = process.argv.indexOf('--work-ms')
const maxWorkMs = workAt === -1 ? 700 : Number(process.argv[workAt + 1])

const cancels = new Map<string, AbortController>()
let nextSession = 0

const app = acp
  .agent({ name: 'baton-chaos-witness' })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
  }))
  .onRequest(acp.methods.agent.session.new, () => {
    nextSession += 1
    return { sessionId: `witness-${process.pid}-${nextSession}` }
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const first = params.prompt[0]
    const token = first !== undefined && first.type === 'text' ? first.text : ''
    // One short line with O_APPEND: concurrent children on one host never interleave within it.
    appendFileSync(witnessFile, `${token} ${process.pid}\n`)
    const cancel = new AbortController()
    cancels.set(params.sessionId, cancel)
    const workMs = 100 + Math.floor(Math.random() * maxWorkMs)
    const cancelled = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), workMs)
      cancel.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          resolve(true)
        },
        { once: true },
      )
    })
    if (cancelled) return { stopReason: 'cancelled' as const }
    await client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: {
        sessionUpdate: 'agent_message_chunk',
        content: { type: 'text', text: `witnessed ${token}` },
      },
    })
    return { stopReason: 'end_turn' as const }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    cancels.get(params.sessionId)?.abort()
  })

const connection = app.connect(
  acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  ),
)
// The worker closing stdin (or dying) ends the agent, as a real stdio agent would.
void connection.closed.then(() => process.exit(0))
