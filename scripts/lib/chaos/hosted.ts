// Hosted parents in `npm run chaos`: `--hosted` sessions on two profiles whose scripted parent
// delegates its first input to one or two children (`hosted-child`, which answers late) and ends
// its turn; every later run — the user's next inputs and each late result's continuation run —
// answers with the user messages of its conversation (the `recall` step), so the audit can check
// what each run was given. The user runs are submitted while the delegations and faults run; after
// quiescence the script waits until no hosted run is queued or active, and the ledger audit
// (`auditHostedSessions`, called by audit.ts) checks one run at a time, one continuation run per
// result and every conversation intact.
import { setTimeout as sleep } from 'node:timers/promises'
import { writeHostedProfiles } from '../hosted-profiles.ts'
import { GaveUp, retryCall } from './retry.ts'
import { POST_TIMEOUT_MS, rand, type ChaosRun } from './run.ts'

/** Parents delegating to one and to two children; both recall, so both are audited as such. */
export const HOSTED_PROFILES = ['chaos-one', 'chaos-two'] as const
const CHILD = 'hosted-child'
/** User runs each hosted session is given (the first delegates, the others recall). */
export const RUNS_PER_SESSION = 3

/** A parent's script: delegate `children` children, then recall; a resumed parent recalls. */
function parentScript(children: number) {
  // The pauses widen the windows in which a worker kill or a fault lands mid-run.
  const recall = { kind: 'recall', delayMs: 200 }
  return {
    steps: [
      {
        kind: 'tool-calls',
        calls: Array.from({ length: children }, (_, k) => ({
          toolName: 'delegate',
          input: { name: CHILD, prompt: `question ${k + 1}` },
        })),
      },
      recall,
    ],
    resumeSteps: [recall],
  }
}

/** Writes the profiles file and the scripted models; the result is env for every process. */
export function writeChaosProfiles(dir: string, scriptedModelsDir: string) {
  return writeHostedProfiles(dir, scriptedModelsDir, {
    parents: { 'chaos-one': parentScript(1), 'chaos-two': parentScript(2) },
    // The child answers after its parent's run has ended: its result is a late one.
    child: {
      name: CHILD,
      description: 'Answers with its task, after a pause',
      script: { steps: [{ kind: 'recall', delayMs: 800 }] },
    },
  })
}

/** Creates `--hosted` sessions and submits their user runs, spread over time, until the deadline. */
export async function submitHosted(run: ChaosRun): Promise<void> {
  const call = <T>(fn: () => Promise<T>) =>
    retryCall(fn, { signal: run.submitDeadline, maxDelayMs: 250 })
  await Promise.all(
    Array.from({ length: run.options.hosted }, async (_, s) => {
      try {
        const { sessionId } = await call(() =>
          run.client.createSession(
            {
              profile: HOSTED_PROFILES[s % HOSTED_PROFILES.length]!,
              metadata: { labels: { chaos: String(s) } },
            },
            { timeoutMs: POST_TIMEOUT_MS },
          ),
        )
        run.stats.hosted.sessions += 1
        for (let r = 0; r < RUNS_PER_SESSION; r += 1) {
          await sleep(rand(0, 4000))
          // One key per user run: a retry after a lost answer gets the run the first request
          // queued, never a second one.
          const input = `hosted-${s}-${r}`
          await call(() =>
            run.client.startRun(
              sessionId,
              { input },
              { timeoutMs: POST_TIMEOUT_MS, idempotencyKey: input },
            ),
          )
          run.stats.hosted.runs += 1
        }
      } catch (error) {
        if (!(error instanceof GaveUp)) throw error
      }
    }),
  )
}
