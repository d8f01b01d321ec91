import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { FailureCategory, readScript, type Script } from '@baton/contracts'
import { NO_START_CAPABILITIES } from '@baton/subagents'
import type {
  ContentBlock,
  SubagentProvider,
  SubagentResult,
  SubagentRun,
  SubagentStartRequest,
} from '@baton/subagents'

/**
 * The built-in `scripted` subagent: a deterministic child for tests, demos and the benchmark, at
 * no model cost. Its prompt is a JSON script (`scriptSchema` in libs/contracts, which the API
 * checks at accept time); a prompt that is not one is echoed back.
 *
 * It honours its AbortSignal at every wait: an aborted run ends `aborted` — at once, or
 * `ignoreCancelMs` after the abort (a child slow to honour cancellation).
 */
export function parseScript(prompt: readonly ContentBlock[]): Script {
  const reading = readScript(prompt)
  // An invalid script reaches a worker only from a row accepted before the API checked scripts.
  return reading.kind === 'script'
    ? reading.script
    : { output: prompt.map((b) => b.text).join('\n') }
}

/** Steering messages received by one run, and a way to wait for the next. */
class SteeringInbox {
  readonly texts: string[] = []
  private wake: (() => void) | undefined
  push(content: readonly ContentBlock[]): void {
    this.texts.push(content.map((b) => b.text).join(''))
    this.wake?.()
  }
  async waitFor(count: number, signal: AbortSignal): Promise<void> {
    while (this.texts.length < count) {
      await new Promise<void>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason as Error)
        const onAbort = (): void => reject(signal.reason as Error)
        signal.addEventListener('abort', onAbort, { once: true })
        this.wake = () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        }
      })
    }
  }
}

async function runScript(
  script: Script,
  signal: AbortSignal,
  inbox: SteeringInbox,
): Promise<SubagentResult> {
  const aborted: SubagentResult = {
    output: [],
    stopReason: 'aborted',
    failureCategory: FailureCategory.Cancelled,
  }
  try {
    if (script.delayMs !== undefined && script.delayMs > 0)
      await sleep(script.delayMs, undefined, { signal })
    if (script.hang === true) {
      await new Promise((_, reject) => {
        if (signal.aborted) reject(signal.reason as Error)
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true })
      })
    }
    if (script.awaitSteering !== undefined) await inbox.waitFor(script.awaitSteering, signal)
  } catch {
    return aborted
  }
  if (signal.aborted) return aborted
  if (script.fail !== undefined) {
    // The failure text stays inside the child: the ledger gets a safe category only.
    return { output: [], stopReason: 'error', failureCategory: FailureCategory.ChildFailed }
  }
  const text =
    script.awaitSteering !== undefined
      ? inbox.texts.join('\n')
      : script.outputBytes !== undefined
        ? (script.output ?? 'x')
            .repeat(Math.ceil(script.outputBytes / Math.max(1, (script.output ?? 'x').length)))
            .slice(0, script.outputBytes)
        : (script.output ?? '')
  return { output: text === '' ? [] : [{ type: 'text', text }], stopReason: 'completed' }
}

export function createScriptedPromptProvider(): SubagentProvider {
  return {
    name: 'scripted',
    capabilities: NO_START_CAPABILITIES,
    inheritsParentContext: false,
    start(request: SubagentStartRequest): Promise<SubagentRun> {
      if (request.signal.aborted) return Promise.reject(new Error('start aborted'))
      const script = parseScript(request.prompt)
      const controller = new AbortController()
      const ignoreMs = script.ignoreCancelMs
      const forward = (): void => {
        if (ignoreMs === undefined) controller.abort(request.signal.reason)
        else setTimeout(() => controller.abort(request.signal.reason), ignoreMs)
      }
      request.signal.addEventListener('abort', forward, { once: true })
      const inbox = new SteeringInbox()
      const result = runScript(script, controller.signal, inbox).finally(() =>
        request.signal.removeEventListener('abort', forward),
      )
      const run: SubagentRun = {
        id: `scripted:${request.parent.session.id}:${randomUUID()}`,
        localAgent: undefined,
        result,
        async dispose() {
          controller.abort(new Error('disposed'))
          await result.catch(() => undefined)
        },
        sendMessage: (content) => inbox.push(content),
      }
      return Promise.resolve(run)
    },
  }
}
