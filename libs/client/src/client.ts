import { ErrorCode, resultDigest } from '@baton/contracts'
import { readEventStream } from './event-stream.ts'
import {
  sendRequest,
  sendWithFetch,
  type Answer,
  type HttpMethod,
  type Transport,
} from './transport.ts'
import type {
  AgentHistoryView,
  AnyAttemptView,
  ApiKeyView,
  IssuedApiKeyView,
  NamespaceLimitsView,
  NamespaceView,
  StoredNamespaceLimits,
  DelegationAccepted,
  DelegationMetadata,
  BatchItem,
  ClaimFence,
  ContinuationClaim,
  ContinuationConclusion,
  ErrorBody,
  Prompt,
  RunConsumption,
  RunLease,
  RunView,
  RegisterWebhookRequest,
  RegisteredWebhook,
  WebhookDeliveryState,
  WebhookDeliveryView,
  WebhookView,
  CreateSessionRequest,
  HostedRunView,
  SessionView,
  SessionEvent,
} from '@baton/contracts'

/** An error answer of the Baton API, with its HTTP status, typed code and raw body. */
export class BatonApiError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly details: Readonly<Record<string, unknown>> | undefined
  /** The answer's body as sent, for callers that log what a failing server said. */
  readonly body: string
  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    details?: Readonly<Record<string, unknown>>,
    body = '',
  ) {
    super(message)
    this.name = 'BatonApiError'
    this.status = status
    this.code = code
    this.details = details
    this.body = body
  }
}

export interface DelegateInput {
  readonly sessionId: string
  readonly name: string
  readonly prompt: Prompt
  /** Continue a known agent (its last attempt must be terminal). */
  readonly agentId?: string
  /** The run that makes the delegation: its result is handed back to it (or a continuation). */
  readonly parentRunId?: string
  /** The attempt that makes the delegation (a child delegating its own children). */
  readonly parentAttemptId?: string
  readonly metadata?: DelegationMetadata
}

/** Options of one call. */
export interface CallOptions {
  /**
   * Sent as `Idempotency-Key`: a retry with the same key after a lost answer gets the first
   * delegation (or hosted run) back instead of creating a second one. Delegation calls and
   * `startRun` use it; a host run (`createRun`) refuses it.
   */
  readonly idempotencyKey?: string
  /** Abandons the call (rejects with a `TimeoutError`) when no answer arrived in time. */
  readonly timeoutMs?: number
  /** Abandons the call when it fires. */
  readonly signal?: AbortSignal
}

/** One item's answer in a batch submit: what the single-delegation route would have answered. */
export type BatchResult =
  | { readonly status: 202; readonly body: DelegationAccepted & { readonly replayed: boolean } }
  | { readonly status: number; readonly body: ErrorBody }

export interface BatonClient {
  /** Accept a delegation: `{ agentId, attemptId, status: 'accepted' }`. */
  delegate(input: DelegateInput, options?: CallOptions): Promise<DelegationAccepted>
  /** Submit and wait at most `timeoutMs`: the terminal view, or the snapshot when the bound expires. */
  delegateAndWait(
    input: DelegateInput,
    timeoutMs: number,
    options?: CallOptions,
  ): Promise<AnyAttemptView>
  /**
   * Submit many delegations of one session at once (each item may carry its own
   * `idempotencyKey`): one answer per item, in order; a refused item fails no other.
   */
  delegateBatch(
    sessionId: string,
    items: readonly BatchItem[],
    options?: CallOptions,
  ): Promise<{ results: BatchResult[] }>
  getAttempt(attemptId: string, options?: CallOptions): Promise<AnyAttemptView>
  /** One bounded wait: the terminal view, or the snapshot when the bound expires. Never an error for "not finished". */
  wait(attemptId: string, timeoutMs: number, options?: CallOptions): Promise<AnyAttemptView>
  cancel(
    attemptId: string,
    reason?: string,
    options?: CallOptions,
  ): Promise<{ attemptId: string; outcome: 'cancelled_queued' | 'cancel_requested' }>
  steer(
    attemptId: string,
    content: Prompt,
    options?: CallOptions,
  ): Promise<{ attemptId: string; sequence: number }>
  /** The agent's durable history: only what its attempts' terminal commits appended. */
  getAgentHistory(agentId: string, options?: CallOptions): Promise<AgentHistoryView>
  /**
   * Start a run of a session; with `consume`, an explicit run of suppressed results (answered in
   * `consumed` with their receipts: check each with `verifyDelivery`). It lives `leaseMs`
   * (default 600000) unless renewed with `heartbeatRun`.
   */
  createRun(
    sessionId: string,
    input?: { readonly consume?: readonly string[]; readonly leaseMs?: number },
    options?: CallOptions,
  ): Promise<RunConsumption>
  getRun(runId: string, options?: CallOptions): Promise<HostedRunView>
  /** Create a hosted session on a profile of the deployment's profiles file. */
  createSession(input: CreateSessionRequest, options?: CallOptions): Promise<SessionView>
  getSession(sessionId: string, options?: CallOptions): Promise<SessionView>
  /**
   * Queue a run of a hosted session, executed by the fleet after every run admitted before it;
   * with `wait`, one bounded wait of that many milliseconds for its end. With
   * `options.idempotencyKey`, a retry after a lost answer gets the first request's run.
   */
  startRun(
    sessionId: string,
    input: { readonly input: Prompt; readonly wait?: number },
    options?: CallOptions,
  ): Promise<HostedRunView>
  /** One bounded wait for a run's end: the ended run, or at the bound the run as it is. */
  waitRun(runId: string, timeoutMs: number, options?: CallOptions): Promise<HostedRunView>
  /**
   * A hosted session's events (or one run's), read from the Server-Sent Events stream as they
   * come, after `after`; with `follow: false` the stored ones only. A followed run stream ends
   * once the run has ended.
   */
  events(
    target: { readonly sessionId: string } | { readonly runId: string },
    options?: {
      readonly after?: number
      readonly follow?: boolean
      readonly signal?: AbortSignal
    },
  ): AsyncIterable<SessionEvent>
  /** Extend a run's lease by `leaseMs` from now. */
  heartbeatRun(runId: string, leaseMs: number, options?: CallOptions): Promise<RunLease>
  /**
   * Complete a run; `consumed` names results held for it that it consumed itself, answered in
   * `consumed` with their receipts.
   */
  completeRun(
    runId: string,
    input?: { readonly consumed?: readonly string[] },
    options?: CallOptions,
  ): Promise<RunConsumption>
  failRun(runId: string, options?: CallOptions): Promise<RunView>
  /** Cancel a run; with `cascade`, every attempt below it that has not finished too. */
  cancelRun(
    runId: string,
    input?: { readonly cascade?: boolean },
    options?: CallOptions,
  ): Promise<RunView>
  /** The session's deletion fence: nothing new is admitted; the evidence stays. */
  deleteSession(sessionId: string, options?: CallOptions): Promise<void>
  /**
   * One bounded wait for the session's next continuation: the claim (its receipt, input and
   * content: check them with `verifyDelivery`), or `undefined` when none arrived within
   * `timeoutMs`.
   */
  claimContinuation(
    sessionId: string,
    input: { readonly timeoutMs: number; readonly leaseMs: number },
    options?: CallOptions,
  ): Promise<ContinuationClaim | undefined>
  heartbeatContinuation(
    runId: string,
    fence: ClaimFence,
    leaseMs: number,
    options?: CallOptions,
  ): Promise<RunLease>
  /** Conclude a claimed continuation; an exact retry answers the same receipt. */
  completeContinuation(
    runId: string,
    fence: ClaimFence,
    options?: CallOptions,
  ): Promise<ContinuationConclusion>
  failContinuation(
    runId: string,
    fence: ClaimFence,
    options?: CallOptions,
  ): Promise<ContinuationConclusion>
  /**
   * An attempt's complete output (`view.artifact.artifactId`), verified against its digest here
   * too. `410 ARTIFACT_EXPIRED` once retention deleted it; `ARTIFACT_INTEGRITY` on a mismatch.
   */
  readArtifact(artifactId: string, options?: CallOptions): Promise<Artifact>
  /**
   * Registers the session's webhook (or replaces its URL and secret); the answer is the only one
   * that shows the secret. See docs/webhooks.md.
   */
  registerSessionWebhook(
    sessionId: string,
    input: RegisterWebhookRequest,
    options?: CallOptions,
  ): Promise<RegisteredWebhook>
  getSessionWebhook(sessionId: string, options?: CallOptions): Promise<WebhookView>
  removeSessionWebhook(sessionId: string, options?: CallOptions): Promise<void>
  /** The namespace's webhook deliveries, newest first. */
  listWebhookDeliveries(
    query?: {
      readonly sessionId?: string
      readonly state?: WebhookDeliveryState
      readonly limit?: number
    },
    options?: CallOptions,
  ): Promise<{ deliveries: WebhookDeliveryView[] }>
  /** Administration: these calls need a client made with the admin key as its `apiKey`. */
  readonly admin: BatonAdmin
}

export interface BatonAdmin {
  createNamespace(
    namespaceId: string,
    description?: string,
    options?: CallOptions,
  ): Promise<NamespaceView>
  listNamespaces(options?: CallOptions): Promise<{ namespaces: NamespaceView[] }>
  /** Issues a key: the answer's `key` is the only time Baton shows it. */
  issueKey(namespaceId: string, name: string, options?: CallOptions): Promise<IssuedApiKeyView>
  listKeys(namespaceId: string, options?: CallOptions): Promise<{ keys: ApiKeyView[] }>
  revokeKey(keyId: string, options?: CallOptions): Promise<ApiKeyView>
  /** Registers the namespace's webhook (sessions without their own use it). */
  registerNamespaceWebhook(
    namespaceId: string,
    input: RegisterWebhookRequest,
    options?: CallOptions,
  ): Promise<RegisteredWebhook>
  getNamespaceWebhook(namespaceId: string, options?: CallOptions): Promise<WebhookView>
  removeNamespaceWebhook(namespaceId: string, options?: CallOptions): Promise<void>
  /** The namespace's limits as stored (`null`: the default applies) and the API's defaults. */
  getNamespaceLimits(namespaceId: string, options?: CallOptions): Promise<NamespaceLimitsView>
  /** Replaces the namespace's limits; a `null` or absent one falls back to the default. */
  setNamespaceLimits(
    namespaceId: string,
    limits: Partial<StoredNamespaceLimits>,
    options?: CallOptions,
  ): Promise<NamespaceLimitsView>
}

/** A loaded artifact: its exact bytes and `resultDigest`. */
export interface Artifact {
  readonly content: Uint8Array
  readonly digest: string
  /** The content as text (it is the UTF-8 of the child's output). */
  text(): string
}

export interface CreateClientOptions {
  /** e.g. `http://127.0.0.1:3000` */
  readonly baseUrl: string
  /**
   * Sent as `Authorization: Bearer <apiKey>` on every call: a namespace's key (the calls act in
   * that namespace), or the admin key for `admin` calls.
   */
  readonly apiKey?: string
  /**
   * Another transport with `fetch`'s contract (a proxy, a test double of the network). By default
   * the client calls undici's `request` over its keep-alive connection pool (`transport.ts`).
   */
  readonly fetch?: typeof fetch
}

/** A call's signal (the caller's, its timeout's, both or none) and `end`, which stops its timer. */
interface CallSignal {
  readonly signal: AbortSignal | undefined
  readonly end: () => void
}

const NO_TIMER = (): void => {}

/**
 * The signal of one call. The timeout is a timer the call stops once it has read the answer:
 * `AbortSignal.timeout` would keep its signal, and what listens to it, alive for the whole timeout
 * however soon the answer came, which moves every call's leftovers out of the young generation.
 */
function callSignal(options: CallOptions): CallSignal {
  if (options.timeoutMs === undefined) return { signal: options.signal, end: NO_TIMER }
  const timeout = new AbortController()
  const timer = setTimeout(
    () => timeout.abort(new DOMException('The operation timed out.', 'TimeoutError')),
    options.timeoutMs,
  )
  const signal =
    options.signal === undefined
      ? timeout.signal
      : AbortSignal.any([options.signal, timeout.signal])
  return { signal, end: () => clearTimeout(timer) }
}

/** Only the fence of a claim (a claim's `claim` also carries its lease's end). */
function fenceOf(fence: ClaimFence): ClaimFence {
  return { claimToken: fence.claimToken, generation: fence.generation }
}

/** A typed client for host applications, the CLI, tests, and the bench and chaos scripts. */
export function createBatonClient(options: CreateClientOptions): BatonClient {
  const base = options.baseUrl.replace(/\/+$/, '')
  const transport: Transport =
    options.fetch === undefined ? sendRequest : sendWithFetch(options.fetch)

  async function call<T>(
    method: HttpMethod,
    path: string,
    body: unknown,
    callOptions: CallOptions = {},
  ): Promise<T> {
    const { signal, end } = callSignal(callOptions)
    let response: Answer
    let text: string
    try {
      response = await send(method, path, body, callOptions, signal)
      text = await response.text()
    } finally {
      end()
    }
    // 204: nothing to answer (a deleted session, a claim that found nothing in time).
    if (response.status === 204) return undefined as T
    const payload = parseJson(text)
    if (response.status < 200 || response.status > 299)
      throw apiError(response.status, payload, text)
    if (payload === undefined)
      throw new BatonApiError(response.status, 'INTERNAL', 'answer is not JSON', undefined, text)
    return payload as T
  }

  function send(
    method: HttpMethod,
    path: string,
    body: unknown,
    callOptions: CallOptions,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const headers: Record<string, string> = {}
    if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (callOptions.idempotencyKey !== undefined)
      headers['idempotency-key'] = callOptions.idempotencyKey
    return transport(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal === undefined ? {} : { signal }),
    })
  }

  async function readArtifact(
    artifactId: string,
    callOptions: CallOptions = {},
  ): Promise<Artifact> {
    // The timeout covers the body too: the timer stops once the last byte is read.
    const { signal, end } = callSignal(callOptions)
    let response: Answer
    let content: Uint8Array
    try {
      response = await send(
        'GET',
        `/v1/artifacts/${encodeURIComponent(artifactId)}`,
        undefined,
        callOptions,
        signal,
      )
      if (response.status < 200 || response.status > 299) {
        const text = await response.text()
        throw apiError(response.status, parseJson(text), text)
      }
      content = await response.bytes()
    } finally {
      end()
    }
    const digest = response.header('baton-digest') ?? ''
    if (resultDigest(content) !== digest) {
      throw new BatonApiError(
        response.status,
        ErrorCode.ArtifactIntegrity,
        'the received artifact does not match its digest',
      )
    }
    return { content, digest, text: () => new TextDecoder().decode(content) }
  }

  const body = (input: DelegateInput) => ({
    name: input.name,
    prompt: input.prompt,
    ...(input.agentId === undefined ? {} : { agentId: input.agentId }),
    ...(input.parentRunId === undefined ? {} : { parentRunId: input.parentRunId }),
    ...(input.parentAttemptId === undefined ? {} : { parentAttemptId: input.parentAttemptId }),
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
  })
  const delegationsPath = (sessionId: string) =>
    `/v1/sessions/${encodeURIComponent(sessionId)}/delegations`
  const attemptPath = (attemptId: string) => `/v1/attempts/${encodeURIComponent(attemptId)}`
  const sessionPath = (sessionId: string) => `/v1/sessions/${encodeURIComponent(sessionId)}`
  const runPath = (runId: string) => `/v1/runs/${encodeURIComponent(runId)}`
  const continuationPath = (runId: string) => `/v1/continuations/${encodeURIComponent(runId)}`
  const namespaceWebhookPath = (namespaceId: string) =>
    `/v1/admin/namespaces/${encodeURIComponent(namespaceId)}/webhook`

  return {
    delegate: (input, o) => call('POST', delegationsPath(input.sessionId), body(input), o),
    delegateAndWait: (input, timeoutMs, o) =>
      call('POST', delegationsPath(input.sessionId), { ...body(input), wait: { timeoutMs } }, o),
    delegateBatch: (sessionId, items, o) =>
      call('POST', `${delegationsPath(sessionId)}/batch`, { items }, o),
    getAttempt: (attemptId, o) => call('GET', attemptPath(attemptId), undefined, o),
    wait: (attemptId, timeoutMs, o) =>
      call('GET', `${attemptPath(attemptId)}/wait?timeoutMs=${timeoutMs}`, undefined, o),
    cancel: (attemptId, reason, o) =>
      call('POST', `${attemptPath(attemptId)}/cancel`, reason === undefined ? {} : { reason }, o),
    steer: (attemptId, content, o) =>
      call('POST', `${attemptPath(attemptId)}/steer`, { content }, o),
    getAgentHistory: (agentId, o) =>
      call('GET', `/v1/agents/${encodeURIComponent(agentId)}/context`, undefined, o),
    createRun: (sessionId, input = {}, o) =>
      call('POST', `${sessionPath(sessionId)}/runs`, input, o),
    getRun: (runId, o) => call('GET', runPath(runId), undefined, o),
    createSession: (input, o) => call('POST', '/v1/sessions', input, o),
    getSession: (sessionId, o) => call('GET', sessionPath(sessionId), undefined, o),
    startRun: (sessionId, input, o) => call('POST', `${sessionPath(sessionId)}/runs`, input, o),
    waitRun: (runId, timeoutMs, o) =>
      call('GET', `${runPath(runId)}/wait?timeoutMs=${timeoutMs}`, undefined, o),
    events: (target, o = {}) =>
      readEventStream(
        `${base}${'runId' in target ? runPath(target.runId) : sessionPath(target.sessionId)}/events` +
          `?follow=${String(o.follow ?? true)}${o.after === undefined ? '' : `&after=${String(o.after)}`}`,
        options.apiKey,
        options.fetch ?? globalThis.fetch,
        o.signal,
        (status, text) => apiError(status, parseJson(text), text),
      ),
    heartbeatRun: (runId, leaseMs, o) =>
      call('POST', `${runPath(runId)}/heartbeat`, { leaseMs }, o),
    completeRun: (runId, input = {}, o) => call('POST', `${runPath(runId)}/complete`, input, o),
    failRun: (runId, o) => call('POST', `${runPath(runId)}/fail`, {}, o),
    cancelRun: (runId, input = {}, o) => call('POST', `${runPath(runId)}/cancel`, input, o),
    deleteSession: (sessionId, o) => call('DELETE', sessionPath(sessionId), undefined, o),
    claimContinuation: (sessionId, input, o) =>
      call('POST', `${sessionPath(sessionId)}/continuations/claim`, input, o),
    heartbeatContinuation: (runId, fence, leaseMs, o) =>
      call('POST', `${continuationPath(runId)}/heartbeat`, { ...fenceOf(fence), leaseMs }, o),
    completeContinuation: (runId, fence, o) =>
      call('POST', `${continuationPath(runId)}/complete`, fenceOf(fence), o),
    failContinuation: (runId, fence, o) =>
      call('POST', `${continuationPath(runId)}/fail`, fenceOf(fence), o),
    registerSessionWebhook: (sessionId, input, o) =>
      call('PUT', `${sessionPath(sessionId)}/webhook`, input, o),
    getSessionWebhook: (sessionId, o) =>
      call('GET', `${sessionPath(sessionId)}/webhook`, undefined, o),
    removeSessionWebhook: (sessionId, o) =>
      call('DELETE', `${sessionPath(sessionId)}/webhook`, undefined, o),
    listWebhookDeliveries: (query = {}, o) => {
      const params = new URLSearchParams()
      if (query.sessionId !== undefined) params.set('sessionId', query.sessionId)
      if (query.state !== undefined) params.set('state', query.state)
      if (query.limit !== undefined) params.set('limit', String(query.limit))
      const search = params.size === 0 ? '' : `?${params.toString()}`
      return call('GET', `/v1/webhook-deliveries${search}`, undefined, o)
    },
    admin: {
      createNamespace: (namespaceId, description, o) =>
        call(
          'POST',
          '/v1/admin/namespaces',
          description === undefined ? { namespaceId } : { namespaceId, description },
          o,
        ),
      listNamespaces: (o) => call('GET', '/v1/admin/namespaces', undefined, o),
      issueKey: (namespaceId, name, o) =>
        call('POST', `/v1/admin/namespaces/${encodeURIComponent(namespaceId)}/keys`, { name }, o),
      listKeys: (namespaceId, o) =>
        call('GET', `/v1/admin/namespaces/${encodeURIComponent(namespaceId)}/keys`, undefined, o),
      revokeKey: (keyId, o) =>
        call('POST', `/v1/admin/keys/${encodeURIComponent(keyId)}/revoke`, {}, o),
      registerNamespaceWebhook: (namespaceId, input, o) =>
        call('PUT', namespaceWebhookPath(namespaceId), input, o),
      getNamespaceWebhook: (namespaceId, o) =>
        call('GET', namespaceWebhookPath(namespaceId), undefined, o),
      removeNamespaceWebhook: (namespaceId, o) =>
        call('DELETE', namespaceWebhookPath(namespaceId), undefined, o),
      getNamespaceLimits: (namespaceId, o) =>
        call('GET', `/v1/admin/namespaces/${encodeURIComponent(namespaceId)}/limits`, undefined, o),
      setNamespaceLimits: (namespaceId, limits, o) =>
        call('PUT', `/v1/admin/namespaces/${encodeURIComponent(namespaceId)}/limits`, limits, o),
    },
    readArtifact,
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    // A proxy or a dying server may answer with something that is not JSON.
    return undefined
  }
}

/** The typed error of a non-2xx answer. */
function apiError(status: number, payload: unknown, text: string): BatonApiError {
  const error = (
    payload as
      | { error?: { code?: ErrorCode; message?: string; details?: Record<string, unknown> } }
      | undefined
  )?.error
  return new BatonApiError(
    status,
    error?.code ?? 'INTERNAL',
    error?.message ?? `HTTP ${status}`,
    error?.details,
    text,
  )
}
