import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { FailureCategory, readScript, type Script } from '@baton/contracts'
import { NO_START_CAPABILITIES } from '@baton/subagents'
import type {
  ContentBlock,
  OutputBudget,
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
  outputBudget: OutputBudget | undefined,
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
  let text: string
  if (script.awaitSteering !== undefined) text = inbox.texts.join('\n')
  else if (script.outputBytes === undefined) text = script.output ?? ''
  else {
    const unit = script.output ?? 'x'
    // Reserved before it is built: an output the host cannot hold is never allocated.
    if (outputBudget?.reserve(repeatedBytes(unit, script.outputBytes)) === false)
      return {
        output: [],
        stopReason: 'error',
        failureCategory: FailureCategory.OutputBudgetExceeded,
      }
    text = unit
      .repeat(Math.ceil(script.outputBytes / Math.max(1, unit.length)))
      .slice(0, script.outputBytes)
  }
  return { output: text === '' ? [] : [{ type: 'text', text }], stopReason: 'completed' }
}

/** UTF-8 size of `unit` repeated to `length` UTF-16 code units, without building it. */
function repeatedBytes(unit: string, length: number): number {
  if (unit.length === 0) return 0
  const whole = Math.floor(length / unit.length)
  return whole * Buffer.byteLength(unit) + Buffer.byteLength(unit.slice(0, length % unit.length))
}

/** Why a run disposed before its script ended is stopped. */
const DISPOSED = new Error('disposed')

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
      let settled = false
      const result = runScript(script, controller.signal, inbox, request.outputBudget).finally(
        () => {
          settled = true
          request.signal.removeEventListener('abort', forward)
        },
      )
      const run: SubagentRun = {
        id: `scripted:${request.parent.session.id}:${randomUUID()}`,
        localAgent: undefined,
        result,
        async dispose() {
          // A finished script has nothing to stop (the usual case: a run is disposed after its
          // result). The reason is made once: an Error per run costs a stack capture.
          if (!settled) controller.abort(DISPOSED)
          await result.catch(() => undefined)
        },
        sendMessage: (content) => inbox.push(content),
      }
      return Promise.resolve(run)
    },
  }
}
