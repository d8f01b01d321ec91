import { randomUUID } from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { FailureCategory } from '@baton/contracts'
import { NO_START_CAPABILITIES } from '@baton/subagents'
import type {
  ContentBlock,
  SubagentCapabilities,
  SubagentProvider,
  SubagentResult,
  SubagentRun,
  SubagentStartRequest,
  SubagentStopReason,
} from '@baton/subagents'
import { spawnAgentProcess, type AgentProcess } from './agent-process.ts'
import { AcpProviderError, AcpStartErrorCode } from './errors.ts'
import { mapAcpStopReason } from './stop-reason.ts'
import { readWorkspaceTextFile } from './workspace-fs.ts'

export interface AcpProviderOptions {
  /** Registry name; defaults to `acp`. */
  readonly name?: string
  /** The agent executable, e.g. an absolute path to `node` or an ACP agent binary. */
  readonly command: string
  readonly args?: readonly string[]
  /** The agent's whole environment when present (it then replaces, not extends, the inherited one). */
  readonly env?: Readonly<Record<string, string>>
  /** Deployment workspace override; otherwise the parent session header's cwd is the child's workspace. */
  readonly cwd?: string
  /** Budget for spawn + `initialize` + `session/new`. Defaults to 30 s. */
  readonly startTimeoutMs?: number
  /**
   * How long the agent may take to honour `session/cancel` (on the run's abort, or its dispose)
   * before it is killed. Defaults to 500 ms.
   */
  readonly cancelGraceMs?: number
  /** How long after SIGTERM dispose waits before SIGKILL. Defaults to 2 s. */
  readonly killGraceMs?: number
}

// ACP has no standard way to enforce a JSON output schema, a delegation depth, a tool filter, a
// persona or a resumed conversation on a foreign agent, so none is advertised: the service then
// rejects such requests loudly.
const ACP_CAPABILITIES: SubagentCapabilities = NO_START_CAPABILITIES

const DEFAULT_START_TIMEOUT_MS = 30_000
const DEFAULT_CANCEL_GRACE_MS = 500
const DEFAULT_KILL_GRACE_MS = 2_000
// After the process exits, how long to let the connection drain a final response before judging.
const EXIT_DRAIN_MS = 1_000

const CLIENT_INFO = { name: 'baton', version: '0.0.0' } as const

/**
 * A subagent provider whose child is an external Agent Client Protocol agent spoken to over stdio.
 * Each run owns one agent process and one ACP session in it. Only the workspace crosses the process
 * boundary: the parent's conversation, tools and authority do not.
 */
export function createAcpProvider(options: AcpProviderOptions): SubagentProvider {
  const settings = {
    command: options.command,
    args: options.args ?? [],
    env: options.env,
    cwdOverride: options.cwd,
    startTimeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    cancelGraceMs: options.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS,
    killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
  }
  return {
    name: options.name ?? 'acp',
    capabilities: ACP_CAPABILITIES,
    inheritsParentContext: false,
    start: (request) => startAcpRun(settings, request),
  }
}

interface RunSettings {
  readonly command: string
  readonly args: readonly string[]
  readonly env: Readonly<Record<string, string>> | undefined
  readonly cwdOverride: string | undefined
  readonly startTimeoutMs: number
  readonly cancelGraceMs: number
  readonly killGraceMs: number
}

async function startAcpRun(
  settings: RunSettings,
  request: SubagentStartRequest,
): Promise<SubagentRun> {
  const { signal } = request
  if (signal.aborted) throw startAborted(signal)

  // The one field of the parent that crosses the process boundary.
  const workspace = settings.cwdOverride ?? request.parent.session.header.cwd
  const agentProcess = await spawnAgentProcess({
    command: settings.command,
    args: settings.args,
    cwd: workspace,
    ...(settings.env === undefined ? {} : { env: settings.env }),
  })

  const transcript = createTranscript()
  const connection = connectClient(agentProcess, workspace, transcript)

  let sessionId: string
  try {
    sessionId = await untilReady(openSession(connection, workspace), {
      signal,
      timeoutMs: settings.startTimeoutMs,
      exited: agentProcess.exited,
    })
    transcript.bind(sessionId)
    // Abort observed between the handshake and publication still belongs to start().
    if (signal.aborted) throw startAborted(signal)
  } catch (error) {
    connection.close()
    await agentProcess.terminate(settings.killGraceMs)
    throw error
  }

  return publishRun({ settings, request, agentProcess, connection, sessionId, transcript })
}

/** `initialize` then `session/new`; resolves with the ACP session id. */
async function openSession(connection: acp.ClientConnection, workspace: string): Promise<string> {
  let init: acp.InitializeResponse
  let session: acp.NewSessionResponse
  try {
    init = await connection.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
      clientInfo: CLIENT_INFO,
    })
  } catch (error) {
    throw new AcpProviderError(
      AcpStartErrorCode.HandshakeFailed,
      'The ACP agent rejected initialize.',
      { cause: error },
    )
  }
  if (init.protocolVersion !== acp.PROTOCOL_VERSION) {
    throw new AcpProviderError(
      AcpStartErrorCode.HandshakeFailed,
      'The ACP agent speaks an unsupported protocol version.',
    )
  }
  try {
    session = await connection.agent.request(acp.methods.agent.session.new, {
      cwd: workspace,
      mcpServers: [],
    })
  } catch (error) {
    throw new AcpProviderError(
      AcpStartErrorCode.HandshakeFailed,
      'The ACP agent rejected session/new.',
      { cause: error },
    )
  }
  return session.sessionId
}

/**
 * Races the handshake against the request signal, the start budget and the agent dying. Whatever
 * wins, listeners and timers are released before this settles.
 */
async function untilReady<T>(
  handshake: Promise<T>,
  limits: { signal: AbortSignal; timeoutMs: number; exited: Promise<unknown> },
): Promise<T> {
  let onAbort: (() => void) | undefined
  let timer: NodeJS.Timeout | undefined
  const interrupted = new Promise<never>((_, reject) => {
    onAbort = () => reject(startAborted(limits.signal))
    // An abort that landed while the process was spawning fires no further event.
    if (limits.signal.aborted) onAbort()
    else limits.signal.addEventListener('abort', onAbort, { once: true })
    timer = setTimeout(() => {
      reject(
        new AcpProviderError(
          AcpStartErrorCode.StartTimeout,
          'The ACP agent did not become ready in time.',
        ),
      )
    }, limits.timeoutMs)
    void limits.exited.then(() => {
      reject(
        new AcpProviderError(
          AcpStartErrorCode.AgentProcessExited,
          'The ACP agent exited during startup.',
        ),
      )
    })
  })
  // The loser of the race must not surface as an unhandled rejection.
  handshake.catch(() => undefined)
  try {
    return await Promise.race([handshake, interrupted])
  } finally {
    if (onAbort !== undefined) limits.signal.removeEventListener('abort', onAbort)
    clearTimeout(timer)
  }
}

interface PublishArgs {
  readonly settings: RunSettings
  readonly request: SubagentStartRequest
  readonly agentProcess: AgentProcess
  readonly connection: acp.ClientConnection
  readonly sessionId: string
  readonly transcript: Transcript
}

/**
 * Sends the prompt and hands the run to the caller. From here on failures resolve `result` with a
 * stop reason; nothing rejects. Invariant: `result` settles exactly once, and at the latest when
 * `dispose()` has reaped the process.
 */
function publishRun(args: PublishArgs): SubagentRun {
  const { settings, request, agentProcess, connection, sessionId, transcript } = args
  const { signal } = request

  let settled = false
  let cancelRequested = false
  let killTimer: NodeJS.Timeout | undefined
  let resolveResult!: (result: SubagentResult) => void
  const result = new Promise<SubagentResult>((resolve) => {
    resolveResult = resolve
  })

  const settle = (stopReason: SubagentStopReason, failureCategory?: FailureCategory): void => {
    if (settled) return
    settled = true
    clearTimeout(killTimer)
    signal.removeEventListener('abort', cancel)
    const output = transcript.output()
    resolveResult(
      failureCategory === undefined
        ? { output, stopReason }
        : { output, stopReason, failureCategory },
    )
  }

  function cancel(): void {
    if (settled || cancelRequested) return
    cancelRequested = true
    connection.agent.notify(acp.methods.agent.session.cancel, { sessionId }).catch(() => undefined)
    // An agent that outlives its abort is killed (SIGTERM, SIGKILL after the kill grace): its run
    // then ends `aborted`, so its worker neither waits for it forever nor leaves it running.
    killTimer = setTimeout(() => {
      if (!settled) void agentProcess.terminate(settings.killGraceMs)
    }, settings.cancelGraceMs)
  }

  const settleAborted = (): void => settle('aborted', FailureCategory.Cancelled)

  connection.agent
    .request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: request.prompt.map(toAcpContent),
    })
    .then(
      (response) => {
        if (cancelRequested) return settleAborted()
        const mapped = mapAcpStopReason(response.stopReason)
        settle(mapped.stopReason, mapped.failureCategory)
      },
      async (error: unknown) => {
        if (cancelRequested) return settleAborted()
        if (!connection.signal.aborted && error instanceof acp.RequestError) {
          return settle('error', FailureCategory.AgentRequestFailed)
        }
        // The transport went away: decide between a dead agent and a merely closed pipe.
        await Promise.race([agentProcess.exited, delay(EXIT_DRAIN_MS)])
        if (cancelRequested) return settleAborted()
        settle(
          'error',
          agentProcess.hasExited()
            ? FailureCategory.AgentProcessExited
            : FailureCategory.AgentConnectionClosed,
        )
      },
    )

  void agentProcess.exited.then(async () => {
    // Let a final response already in the pipe be read before calling this a crash.
    await Promise.race([connection.closed, delay(EXIT_DRAIN_MS)])
    if (cancelRequested) return settleAborted()
    settle('error', FailureCategory.AgentProcessExited)
  })

  // start() has just checked the signal synchronously, so it cannot already be aborted here.
  signal.addEventListener('abort', cancel, { once: true })

  let disposing: Promise<void> | undefined
  const dispose = (): Promise<void> => {
    disposing ??= (async () => {
      signal.removeEventListener('abort', cancel)
      if (!settled) {
        cancel()
        await Promise.race([result, delay(settings.cancelGraceMs)])
      }
      connection.close()
      await agentProcess.terminate(settings.killGraceMs)
      settleAborted()
    })()
    return disposing
  }

  return {
    id: `acp:${request.parent.session.id}:${randomUUID()}`,
    localAgent: undefined,
    result,
    dispose,
  }
}

function connectClient(
  agentProcess: AgentProcess,
  workspace: string,
  transcript: Transcript,
): acp.ClientConnection {
  const stream = acp.ndJsonStream(
    Writable.toWeb(agentProcess.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(agentProcess.stdout) as ReadableStream<Uint8Array>,
  )
  const app = acp
    .client({ name: 'baton-acp-provider' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      transcript.record(params)
    })
    // The child acts with no authority of its own: every permission request is denied.
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => denyPermission(params))
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => ({
      content: await readWorkspaceTextFile(workspace, params),
    }))
  return app.connect(stream)
}

function denyPermission(request: acp.RequestPermissionRequest): acp.RequestPermissionResponse {
  const reject =
    request.options.find((option) => option.kind === 'reject_once') ??
    request.options.find((option) => option.kind === 'reject_always')
  return reject === undefined
    ? { outcome: { outcome: 'cancelled' } }
    : { outcome: { outcome: 'selected', optionId: reject.optionId } }
}

interface Transcript {
  /** Starts accepting updates for this session id; updates for any other session are ignored. */
  bind(sessionId: string): void
  record(notification: acp.SessionNotification): void
  output(): ContentBlock[]
}

/** Collects the agent's streamed message text, in arrival order, into the run's output. */
function createTranscript(): Transcript {
  let boundSessionId: string | undefined
  const chunks: string[] = []
  return {
    bind(sessionId) {
      boundSessionId = sessionId
    },
    record(notification) {
      if (notification.sessionId !== boundSessionId) return
      const update = notification.update
      if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') {
        chunks.push(update.content.text)
      }
    },
    output() {
      const text = chunks.join('')
      return text === '' ? [] : [{ type: 'text', text }]
    },
  }
}

function toAcpContent(block: ContentBlock): acp.ContentBlock {
  return { type: 'text', text: block.text }
}

function startAborted(signal: AbortSignal): AcpProviderError {
  return new AcpProviderError(AcpStartErrorCode.StartAborted, 'The subagent start was aborted.', {
    cause: signal.reason,
  })
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
