import { randomUUID } from 'node:crypto'
import { deriveChildDepth } from './delegation-depth.ts'
import { SubagentError } from './errors.ts'
import { assertSupportedOutputSchema } from './output-schema.ts'
import type {
  Agent,
  SessionId,
  SubagentCapabilities,
  SubagentProvider,
  SubagentResult,
  SubagentRun,
  SubagentStartRequest,
} from './types.ts'

/**
 * One accepted run's lifecycle identity. The same object is carried by its `subagent/start` and
 * `subagent/end`, so observers pair them by reference or by `runId`.
 */
export interface SubagentRunIdentity {
  /** Minted by the service, unique per accepted start (distinct from the provider's `run.id`). */
  readonly runId: string
  readonly providerName: string
  /** The provider's run id (the child session id for a local run). */
  readonly sessionId: SessionId
  readonly parentSessionId: SessionId
  /** Snapshot of `run.localAgent` taken when start fulfilled; `undefined` for a remote run. */
  readonly localAgent: Agent | undefined
}

export type SubagentRunEnd =
  | { readonly kind: 'result'; readonly result: SubagentResult }
  | { readonly kind: 'infrastructure-failure'; readonly error: unknown }

export type SubagentServiceEvent =
  | { readonly type: 'subagent/start'; readonly identity: SubagentRunIdentity }
  | {
      readonly type: 'subagent/end'
      readonly identity: SubagentRunIdentity
      readonly end: SubagentRunEnd
    }

/** Observe-only: a listener cannot influence the run, and its exceptions are contained. */
export type SubagentServiceListener = (event: SubagentServiceEvent) => void

export interface SubagentServiceOptions {
  /** Mints lifecycle run ids; defaults to random UUIDs. */
  readonly createRunId?: () => string
  /** Where contained listener exceptions go (default: dropped). Must not throw. */
  readonly onListenerError?: (error: unknown, event: SubagentServiceEvent) => void
}

export interface SubagentService {
  /** Register under the provider's unique name. Returns an idempotent unregister function. */
  registerProvider(provider: SubagentProvider): () => void
  /** Remove a provider: new starts are refused; runs it already accepted carry on untouched. */
  removeProvider(name: string): void
  getProvider(name: string): SubagentProvider | undefined
  providerNames(): readonly string[]
  /**
   * Validate the request against the named provider (capabilities, schema, depth) and only then
   * call `provider.start`. Returns the provider's run object itself.
   */
  start(providerName: string, request: SubagentStartRequest): Promise<SubagentRun>
  /** Subscribe to lifecycle events; returns an unsubscribe function. */
  on(listener: SubagentServiceListener): () => void
}

/** A provider that supports no start-time feature: the service rejects every optional request field. */
export const NO_START_CAPABILITIES: SubagentCapabilities = Object.freeze({
  outputSchema: false,
  depthLimit: false,
  toolFilter: false,
  persona: false,
  history: false,
})

const CAPABILITY_OF_FIELD = {
  outputSchema: 'outputSchema',
  maxDepth: 'depthLimit',
  toolFilter: 'toolFilter',
  persona: 'persona',
  history: 'history',
} as const satisfies Record<string, keyof SubagentCapabilities>

export function createSubagentService(options: SubagentServiceOptions = {}): SubagentService {
  const providers = new Map<string, SubagentProvider>()
  // Names that were registered and later removed: reported as PROVIDER_REMOVED rather than
  // UNKNOWN_PROVIDER, because "it went away" and "it never existed" call for different fixes.
  const removed = new Set<string>()
  const listeners = new Set<SubagentServiceListener>()
  const createRunId = options.createRunId ?? randomUUID

  function emit(event: SubagentServiceEvent): void {
    for (const listener of [...listeners]) {
      try {
        const returned: unknown = listener(event)
        // A listener typed as sync may still be async; its rejection must not go unhandled.
        if (returned instanceof Promise)
          returned.catch((error: unknown) => options.onListenerError?.(error, event))
      } catch (error) {
        options.onListenerError?.(error, event)
      }
    }
  }

  function removeProvider(name: string): void {
    if (providers.delete(name)) removed.add(name)
  }

  return {
    registerProvider(provider) {
      if (providers.has(provider.name)) {
        throw new SubagentError(
          'DUPLICATE_PROVIDER',
          `A subagent provider named "${provider.name}" is already registered; provider names must be unique.`,
        )
      }
      providers.set(provider.name, provider)
      removed.delete(provider.name)
      return () => {
        // Only remove the registration this call created, not a later one reusing the name.
        if (providers.get(provider.name) === provider) removeProvider(provider.name)
      }
    },

    removeProvider,

    getProvider: (name) => providers.get(name),

    providerNames: () => [...providers.keys()],

    async start(providerName, request) {
      const provider = providers.get(providerName)
      if (provider === undefined) {
        if (removed.has(providerName)) {
          throw new SubagentError(
            'PROVIDER_REMOVED',
            `Subagent provider "${providerName}" was removed; it accepts no new runs.`,
          )
        }
        throw new SubagentError(
          'UNKNOWN_PROVIDER',
          `No subagent provider named "${providerName}". Registered: ${[...providers.keys()].join(', ') || '(none)'}.`,
        )
      }
      assertCapabilities(provider, request)
      if (request.outputSchema !== undefined) assertSupportedOutputSchema(request.outputSchema)
      // Validated for every start, capped or not: a parent whose depth is already corrupt or at the
      // safe-integer edge must not spawn a child.
      deriveChildDepth(request.parent, request.maxDepth)

      const run = await provider.start(request)
      const identity: SubagentRunIdentity = {
        runId: createRunId(),
        providerName,
        sessionId: run.id,
        parentSessionId: request.parent.session.id,
        localAgent: run.localAgent,
      }
      emit({ type: 'subagent/start', identity })
      run.result.then(
        (result) => emit({ type: 'subagent/end', identity, end: { kind: 'result', result } }),
        (error: unknown) =>
          emit({ type: 'subagent/end', identity, end: { kind: 'infrastructure-failure', error } }),
      )
      return run
    },

    on(listener) {
      // Wrap so the same function subscribed twice unsubscribes independently.
      const entry: SubagentServiceListener = (event) => listener(event)
      listeners.add(entry)
      return () => {
        listeners.delete(entry)
      }
    },
  }
}

function assertCapabilities(provider: SubagentProvider, request: SubagentStartRequest): void {
  const missing: string[] = []
  for (const [field, capability] of Object.entries(CAPABILITY_OF_FIELD)) {
    if (
      request[field as keyof typeof CAPABILITY_OF_FIELD] !== undefined &&
      !provider.capabilities[capability]
    )
      missing.push(capability)
  }
  if (missing.length > 0) {
    throw new SubagentError(
      'UNSUPPORTED_CAPABILITY',
      `Subagent provider "${provider.name}" does not support: ${missing.join(', ')}. Choose a provider that does or drop those request fields.`,
      { details: { provider: provider.name, missing } },
    )
  }
}
