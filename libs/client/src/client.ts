import type {
  AgentContextView,
  AnyAttemptView,
  DelegationAccepted,
  DelegationMetadata,
  ErrorCode,
  Prompt,
} from '@baton/contracts'

/** An error answer of the Baton API, with its typed code. */
export class BatonApiError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly details: Readonly<Record<string, unknown>> | undefined
  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    details?: Readonly<Record<string, unknown>>,
  ) {
    super(message)
    this.name = 'BatonApiError'
    this.status = status
    this.code = code
    this.details = details
  }
}

export interface DelegateInput {
  readonly sessionId: string
  readonly name: string
  readonly prompt: Prompt
  /** Continue a known agent (its last attempt must be terminal). */
  readonly agentId?: string
  readonly metadata?: DelegationMetadata
}

export interface BatonClient {
  /** Accept a delegation: `{ agentId, attemptId, status: 'accepted' }`. */
  delegate(input: DelegateInput): Promise<DelegationAccepted>
  /** Submit and wait at most `timeoutMs`: the terminal view, or the snapshot when the bound expires. */
  delegateAndWait(input: DelegateInput, timeoutMs: number): Promise<AnyAttemptView>
  getAttempt(attemptId: string): Promise<AnyAttemptView>
  /** One bounded wait: the terminal view, or the snapshot when the bound expires. Never an error for "not finished". */
  wait(attemptId: string, timeoutMs: number): Promise<AnyAttemptView>
  cancel(
    attemptId: string,
    reason?: string,
  ): Promise<{ attemptId: string; outcome: 'cancelled_queued' | 'cancel_requested' }>
  steer(attemptId: string, content: Prompt): Promise<{ attemptId: string; sequence: number }>
  /** The agent's durable history: only what its attempts' terminal commits appended. */
  getAgentContext(agentId: string): Promise<AgentContextView>
}

export interface CreateClientOptions {
  /** e.g. `http://127.0.0.1:3000` */
  readonly baseUrl: string
  /** A fetch implementation (defaults to the global one). */
  readonly fetch?: typeof fetch
}

/** A typed client for host applications, the CLI and tests. */
export function createBatonClient(options: CreateClientOptions): BatonClient {
  const base = options.baseUrl.replace(/\/+$/, '')
  const doFetch = options.fetch ?? fetch

  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const response = await doFetch(`${base}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    })
    const payload = await response.json()
    if (!response.ok) {
      const error = (
        payload as {
          error?: { code?: ErrorCode; message?: string; details?: Record<string, unknown> }
        }
      ).error
      throw new BatonApiError(
        response.status,
        error?.code ?? 'INTERNAL',
        error?.message ?? `HTTP ${response.status}`,
        error?.details,
      )
    }
    return payload as T
  }

  const body = (input: DelegateInput) => ({
    name: input.name,
    prompt: input.prompt,
    ...(input.agentId === undefined ? {} : { agentId: input.agentId }),
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
  })
  const delegationsPath = (sessionId: string) =>
    `/v1/sessions/${encodeURIComponent(sessionId)}/delegations`
  const attemptPath = (attemptId: string) => `/v1/attempts/${encodeURIComponent(attemptId)}`

  return {
    delegate: (input) => call('POST', delegationsPath(input.sessionId), body(input)),
    delegateAndWait: (input, timeoutMs) =>
      call('POST', delegationsPath(input.sessionId), { ...body(input), wait: { timeoutMs } }),
    getAttempt: (attemptId) => call('GET', attemptPath(attemptId)),
    wait: (attemptId, timeoutMs) =>
      call('GET', `${attemptPath(attemptId)}/wait?timeoutMs=${timeoutMs}`),
    cancel: (attemptId, reason) =>
      call('POST', `${attemptPath(attemptId)}/cancel`, reason === undefined ? {} : { reason }),
    steer: (attemptId, content) => call('POST', `${attemptPath(attemptId)}/steer`, { content }),
    getAgentContext: (agentId) => call('GET', `/v1/agents/${encodeURIComponent(agentId)}/context`),
  }
}
