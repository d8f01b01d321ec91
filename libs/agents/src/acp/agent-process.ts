import { spawn } from 'node:child_process'
import type { Readable, Writable } from 'node:stream'
import { AcpProviderError, AcpStartErrorCode } from './errors.ts'

export interface AgentProcessExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** One spawned ACP agent process. Its stdio carries newline-delimited JSON-RPC; stderr is discarded. */
export interface AgentProcess {
  readonly pid: number
  readonly stdin: Writable
  readonly stdout: Readable
  /** Resolves once the process has exited and Node has reaped it. Never rejects. */
  readonly exited: Promise<AgentProcessExit>
  hasExited(): boolean
  /**
   * SIGTERM the agent's process group, SIGKILL it after `killGraceMs`, and resolve only once the
   * agent has been reaped. Idempotent: every call returns the same promise.
   */
  terminate(killGraceMs: number): Promise<AgentProcessExit>
}

export interface SpawnAgentProcessOptions {
  readonly command: string
  readonly args: readonly string[]
  /** Replaces the inherited environment when present. */
  readonly env?: Readonly<Record<string, string>>
  readonly cwd: string
}

// A detached child leads its own process group, so terminate() also reaches the helpers an agent
// starts itself (a CLI wrapper, a language server) instead of orphaning them. Windows has no groups.
const useProcessGroup = process.platform !== 'win32'

/**
 * Spawns the agent and resolves once the OS reports it running. Rejects with `spawn_failed` (and
 * leaves nothing behind) when the command or cwd is unusable.
 */
export function spawnAgentProcess(options: SpawnAgentProcessOptions): Promise<AgentProcess> {
  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'ignore'],
    detached: useProcessGroup,
    ...(options.env === undefined ? {} : { env: { ...options.env } }),
  })
  // A write to a dead agent raises EPIPE on stdin; the connection notices the closed stdout instead.
  child.stdin.on('error', () => undefined)
  child.stdout.on('error', () => undefined)

  let hasExited = false
  const exited = new Promise<AgentProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      hasExited = true
      resolve({ code, signal })
    })
  })

  const signalGroup = (signal: NodeJS.Signals): void => {
    const pid = child.pid
    if (pid === undefined) return
    if (useProcessGroup) {
      try {
        process.kill(-pid, signal)
        return
      } catch {
        // ESRCH: the group is already gone; fall through to the direct child for completeness.
      }
    }
    child.kill(signal)
  }

  let terminating: Promise<AgentProcessExit> | undefined
  const terminate = (killGraceMs: number): Promise<AgentProcessExit> => {
    terminating ??= (async () => {
      child.stdin.destroy()
      if (!hasExited) {
        signalGroup('SIGTERM')
        let timer: NodeJS.Timeout | undefined
        const graceElapsed = new Promise<'grace'>((resolve) => {
          timer = setTimeout(() => resolve('grace'), killGraceMs)
        })
        const first = await Promise.race([exited, graceElapsed])
        clearTimeout(timer)
        if (first === 'grace') signalGroup('SIGKILL')
      }
      const exit = await exited
      // Sweep any group member that outlived the leader (the group id cannot be reused while it exists).
      if (useProcessGroup && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL')
        } catch {
          // ESRCH: nothing left.
        }
      }
      return exit
    })()
    return terminating
  }

  return new Promise<AgentProcess>((resolve, reject) => {
    child.once('error', (error) => {
      // 'error' before 'spawn' means no process exists; after it, the exit path handles the rest.
      if (child.pid === undefined) {
        reject(
          new AcpProviderError(
            AcpStartErrorCode.SpawnFailed,
            'The ACP agent command could not be started.',
            { cause: error },
          ),
        )
      }
    })
    child.once('spawn', () => {
      const pid = child.pid
      if (pid === undefined) {
        reject(
          new AcpProviderError(
            AcpStartErrorCode.SpawnFailed,
            'The ACP agent command could not be started.',
          ),
        )
        return
      }
      resolve({
        pid,
        stdin: child.stdin,
        stdout: child.stdout,
        exited,
        hasExited: () => hasExited,
        terminate,
      })
    })
  })
}
