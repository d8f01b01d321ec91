/**
 * How terminal results are kept: the inline preview bound, the artifact byte limits and the
 * retention period. The worker passes its configuration; these are the documented defaults.
 */
export interface ResultPolicy {
  /** Outputs up to this many UTF-8 bytes are stored inline; larger ones in an artifact. */
  readonly inlineBytes: number
  /** The largest artifact; a larger output ends `error` / `quota_exceeded`. */
  readonly artifactMaxBytes: number
  /** The most bytes of unexpired artifacts one namespace may hold. */
  readonly namespaceMaxBytes: number
  /** How long after its commit (database clock) an artifact's content is kept. */
  readonly retentionMs: number
  /** The most bytes of history (its events' JSON text) one agent may hold. */
  readonly agentHistoryMaxBytes: number
}

export const DEFAULT_RESULT_POLICY: ResultPolicy = Object.freeze({
  inlineBytes: 4096,
  artifactMaxBytes: 64 * 1024 * 1024,
  namespaceMaxBytes: 1024 * 1024 * 1024,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  agentHistoryMaxBytes: 64 * 1024 * 1024,
})
