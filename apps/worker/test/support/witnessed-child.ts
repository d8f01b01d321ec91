// A child whose runs are recorded outside the ledger (the execution witness of the fault tests):
// when each run of each prompt started and ended, and how it ended.
import type { SubagentProvider, SubagentResult } from '@baton/subagents'
import { childProvider } from './worker-harness.ts'

/** One run of a witnessed child, on the wall clock (the database's clock on this host). */
export interface WitnessedRun {
  readonly startedAt: number
  endedAt: number | undefined
  /** `completed`: it ran its course; `aborted`: it honoured its abort. */
  ending: 'completed' | 'aborted' | undefined
}

export interface WitnessedChild {
  readonly provider: SubagentProvider
  /** The runs of each prompt, in start order. */
  readonly runs: ReadonlyMap<string, readonly WitnessedRun[]>
  /** Runs started so far. */
  starts(prompt: string): number
  /** Runs not ended yet. */
  running(): number
}

/**
 * A child for prompts `{"output": "...", "delayMs": n}`: it answers `output` after `delayMs`, or
 * ends `aborted` as soon as its signal fires (it honours its abort).
 */
export function witnessedChild(): WitnessedChild {
  const runs = new Map<string, WitnessedRun[]>()
  const provider = childProvider(async (request): Promise<SubagentResult> => {
    const prompt = request.prompt.map((b) => b.text).join('')
    const { output, delayMs } = JSON.parse(prompt) as { output: string; delayMs?: number }
    const run: WitnessedRun = { startedAt: Date.now(), endedAt: undefined, ending: undefined }
    runs.set(prompt, [...(runs.get(prompt) ?? []), run])
    const aborted = await new Promise<boolean>((resolve) => {
      if (request.signal.aborted) return resolve(true)
      const timer = setTimeout(() => resolve(false), delayMs ?? 0)
      request.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          resolve(true)
        },
        { once: true },
      )
    })
    run.endedAt = Date.now()
    run.ending = aborted ? 'aborted' : 'completed'
    return aborted
      ? { output: [], stopReason: 'aborted' }
      : { output: [{ type: 'text', text: output }], stopReason: 'completed' }
  })
  return {
    provider,
    runs,
    starts: (prompt) => runs.get(prompt)?.length ?? 0,
    running: () => [...runs.values()].flat().filter((r) => r.endedAt === undefined).length,
  }
}

/** The prompt of a witnessed child that answers `output` after `delayMs`. */
export function witnessedPrompt(output: string, delayMs = 0): string {
  return JSON.stringify({ output, delayMs })
}
