import { sql } from 'kysely'
import { ARTIFACT_CHUNK_BYTES, type ClaimableDetail } from '@baton/contracts'
import type { Db } from '../db.ts'
import { reserveArtifactBytes } from '../artifacts/reserve-artifact-bytes.ts'
import { artifactLimitsFor, artifactLimitsOfAttempt } from '../tenants/namespace-limits.ts'
import { discardUpload, stageArtifact, type StagedArtifact } from '../artifacts/stage-artifact.ts'
import { DEFAULT_RESULT_POLICY, type ResultPolicy } from '../artifacts/result-policy.ts'
import { historyBytes, historyLength } from './agent-history.ts'
import {
  UNDELIVERED_READ_COLUMNS,
  toAttemptRecord,
  type AttemptReadRow,
  type AttemptRecord,
} from './get-attempt.ts'
import { toStoredJson } from './stored-json.ts'
import {
  SET_TERMINAL_FROM_INPUT,
  buildTerminalProjection,
  quotaExceededResult,
  terminalInput,
  type BuiltTerminal,
  type TerminalResultInput,
} from './terminal-record.ts'

export interface CommitTerminalInput {
  readonly attemptId: string
  readonly ownerId: string
  readonly ownerGeneration: number
  readonly result: TerminalResultInput
  /** The delegation's `metadata.traceId`, bound into the fingerprint. */
  readonly traceId?: string | undefined
}

export type CommitTerminalOutcome =
  | 'committed'
  /** Already terminal with this exact projection: a retry after a lost response. */
  | 'replayed'
  /** Already terminal with a different projection: the outcome never changes. */
  | 'refused'
  /** This owner's lease expired on the database clock. */
  | 'lease_lost'
  /** Another owner or a newer generation holds the attempt. */
  | 'stale_fence'
  /**
   * Still owned, but the context delta does not start at the agent's current history length:
   * nothing was written. Commit again without the delta.
   */
  | 'history_conflict'
  /**
   * Still owned, but the context delta would take the agent's history past its namespace's
   * agent history limit (`agentHistoryMaxBytes`): nothing was written. Commit again without it.
   */
  | 'history_too_large'
  | 'missing'

/** A commit's outcome and, when it applied, the attempt as it left it (see `commitTerminalsReturning`). */
export interface CommittedTerminal {
  readonly outcome: CommitTerminalOutcome
  /**
   * The attempt as the commit left it, read in the commit's own statement, exactly as `getAttempt`
   * reads it: present when the outcome is `committed` and the delegation named no parent run.
   * With a parent run, the delivery a trigger of that statement records is not visible to it.
   */
  readonly record?: AttemptRecord
  /**
   * The session of the parent run the result goes back to, when the commit applied and the
   * delegation named one: the statement admitted (or held) its continuation, so that session's
   * claims may have something to take.
   */
  readonly parentSession?: ClaimableDetail
}

interface AttemptState {
  /** The agent's history size now, and the namespace's stored limit of it (null: the default). */
  readonly history_bytes: string
  readonly history_limit: string | null
  readonly status: string
  readonly fingerprint: string | null
  readonly owner_id: string | null
  readonly owner_generation: number
  readonly lease_live: boolean
  readonly context_length: number
  readonly namespace_id: string
  readonly session_id: string
}

interface Candidate extends BuiltTerminal {
  readonly input: CommitTerminalInput
  /**
   * Fingerprints an already-terminal attempt may carry for this commit to be its exact retry: the
   * result's own, and for an artifact the `quota_exceeded` terminal the first try may have become.
   */
  readonly replayFingerprints: readonly string[]
  /** The history events as stored (JSON text), and their size in bytes. */
  readonly storedEvents: readonly string[]
  readonly historyBytes: number
}

/**
 * Fenced terminal commits, many per call.
 * Inputs per attempt: id, owner id and generation (the fence), the result, its optional context
 * delta and trace id. Each applies only while the attempt is `running`, owned by (owner,
 * generation), its lease is live at the database's `now()`, and its delta (if any) starts exactly
 * at its agent's current history length; it stores the projection and its fingerprint, appends
 * the audit row and appends the delta's events in the same statement — so a child's history is
 * visible only once its terminal commit succeeded. Inline results of all inputs share one
 * statement; a result that needs an artifact commits in a transaction of its own (see
 * `commitWithArtifact`), so a small output costs nothing more. Commits that did not apply are
 * classified on a fresh snapshot.
 * A delta that would take the agent's history past its namespace's limit (stored, else
 * `policy.agentHistoryMaxBytes`) is not applied either (`history_too_large`).
 * Outcomes: committed | replayed | refused | lease_lost | stale_fence | history_conflict |
 * history_too_large | missing.
 * Retry safety: an exact retry (same fingerprint, which binds the delta and the artifact) after a
 * lost response is `replayed`, appends nothing and counts no usage.
 */
export async function commitTerminals(
  db: Db,
  inputs: readonly CommitTerminalInput[],
  policy: ResultPolicy = DEFAULT_RESULT_POLICY,
): Promise<CommitTerminalOutcome[]> {
  const answers = await commitTerminalsReturning(db, inputs, policy)
  return answers.map((answer) => answer.outcome)
}

/**
 * `commitTerminals`, answering with each outcome the attempt as its commit left it (when it
 * applied, and the delegation named no parent run): whoever announces the settlement can hand the
 * terminal view on, and a waiter need not read it back.
 */
export async function commitTerminalsReturning(
  db: Db,
  inputs: readonly CommitTerminalInput[],
  policy: ResultPolicy = DEFAULT_RESULT_POLICY,
): Promise<CommittedTerminal[]> {
  if (inputs.length === 0) return []
  const rows = inputs.map((input) => candidate(input, policy))
  const inline = rows.filter((r) => r.content === undefined)
  const [inlineAnswers, artifactAnswers] = await Promise.all([
    commitInline(db, inline, policy),
    Promise.all(
      rows.filter((r) => r.content !== undefined).map((r) => commitWithArtifact(db, r, policy)),
    ),
  ])
  return rows.map((r) => {
    const answer = (r.content === undefined ? inlineAnswers : artifactAnswers).shift()
    if (answer === undefined) throw new Error('commitTerminals lost an outcome')
    return answer
  })
}

/** Fenced terminal commit of one attempt: `commitTerminals` with a single input. */
export async function commitTerminal(
  db: Db,
  input: CommitTerminalInput,
  policy: ResultPolicy = DEFAULT_RESULT_POLICY,
): Promise<CommitTerminalOutcome> {
  const [outcome] = await commitTerminals(db, [input], policy)
  if (outcome === undefined) throw new Error('commitTerminals returned no outcome')
  return outcome
}

function candidate(
  input: CommitTerminalInput,
  policy: ResultPolicy,
  refusedOutput?: { readonly bytes: number; readonly digest: string },
): Candidate {
  const options = {
    inlineBytes: policy.inlineBytes,
    retentionMs: policy.retentionMs,
    traceId: input.traceId,
    refusedOutput,
  }
  const built = buildTerminalProjection(
    input.attemptId,
    input.ownerGeneration,
    input.result,
    options,
  )
  // The `quota_exceeded` terminal this commit becomes over quota binds this output's size and
  // digest, so a different oversized output is never taken for its retry.
  const fallback =
    built.content === undefined ? [] : [overQuota(input, policy, built.projection).fingerprint]
  const storedEvents = built.events.map((event) => JSON.stringify(toStoredJson(event)))
  return {
    ...built,
    input,
    replayFingerprints: [built.fingerprint, ...fallback],
    storedEvents,
    historyBytes: storedEvents.reduce((sum, e) => sum + Buffer.byteLength(e, 'utf8'), 0),
  }
}

/** The `quota_exceeded` commit an over-quota `input` becomes (its projection: `refused`). */
function overQuota(
  input: CommitTerminalInput,
  policy: ResultPolicy,
  refused: { readonly outputBytes: number; readonly outputDigest: string },
): Candidate {
  return candidate({ ...input, result: quotaExceededResult(input.result.usageTokens) }, policy, {
    bytes: refused.outputBytes,
    digest: refused.outputDigest,
  })
}

/** Inline results: one statement for all, then one read to classify those that did not apply. */
async function commitInline(
  db: Db,
  rows: readonly Candidate[],
  policy: ResultPolicy,
): Promise<CommittedTerminal[]> {
  if (rows.length === 0) return []
  // Only the first input naming an attempt is applied; any repeat is classified afterwards.
  const firstIndex = new Map<string, number>()
  rows.forEach((r, i) => {
    if (!firstIndex.has(r.input.attemptId)) firstIndex.set(r.input.attemptId, i)
  })
  const applied = await applyTerminals(
    db,
    rows.filter((r, i) => firstIndex.get(r.input.attemptId) === i),
    policy,
  )
  const committed = (i: number, attemptId: string): boolean =>
    applied.has(attemptId) && firstIndex.get(attemptId) === i
  const toClassify = rows.filter((r, i) => !committed(i, r.input.attemptId))
  const states = new Map<string, AttemptState>()
  if (toClassify.length > 0) {
    const current = await sql<AttemptState & { id: string }>`
      select ${STATE_COLUMNS}
      from attempts a where a.id = any(${toClassify.map((r) => r.input.attemptId)}::uuid[])
    `.execute(db)
    for (const row of current.rows) states.set(row.id, row)
  }
  return rows.map((row, i): CommittedTerminal => {
    if (committed(i, row.input.attemptId)) return committedAnswer(applied.get(row.input.attemptId))
    // Owned and live but not applied: it lost the row to a concurrent statement; the lease is the
    // safe answer (a retry re-classifies).
    return { outcome: classify(states.get(row.input.attemptId), row, policy) ?? 'lease_lost' }
  })
}

/**
 * A result that needs an artifact. First, outside any lock, its content is staged in chunks
 * (`stageArtifact`: the bytes are sent and stored in short transactions of their own, and hashed
 * once, by `buildTerminalProjection`). Then one transaction binds it (`bindStaged`), carrying only
 * the upload's id, size and digest. An upload that transaction did not bind (refused, replayed, a
 * stale fence, over quota) is deleted after it; one collected by expiry meanwhile (a commit that
 * waited longer than `UPLOAD_GRACE_MS`) is staged again once.
 */
async function commitWithArtifact(
  db: Db,
  row: Candidate,
  policy: ResultPolicy,
): Promise<CommittedTerminal> {
  const { input, content, projection } = row
  if (content === undefined || projection.artifact === undefined) {
    throw new Error('commitWithArtifact needs a result with an artifact')
  }
  // The namespace's limits as stored now: an output over them is never written (the commit's own
  // read of them, in its transaction, decides).
  const limits = await artifactLimitsOfAttempt(db, input.attemptId, policy)
  const stage = async (): Promise<StagedArtifact | undefined> =>
    content.length > limits.artifactMaxBytes
      ? undefined
      : stageArtifact(db, {
          attemptId: input.attemptId,
          content,
          digest: projection.outputDigest,
        })
  let staged = await stage()
  for (let tries = 1; ; tries += 1) {
    const answer = await bindStaged(db, row, staged, policy).catch(async (error: unknown) => {
      if (staged !== undefined) await discardUpload(db, staged).catch(() => undefined)
      throw error
    })
    if (answer === 'upload_lost' && tries === 1) {
      staged = await stage()
      continue
    }
    if (answer === 'upload_lost') throw new Error('a staged artifact was collected twice')
    if (!answer.bound && staged !== undefined) await discardUpload(db, staged)
    return answer.committed
  }
}

/**
 * The terminal commit of a result whose content is staged, in one transaction: lock the attempt
 * row and check the fence (an exact retry is recognised here, before any usage is counted); then
 * read the namespace's limits (stored in the ledger, else the policy's defaults), check the
 * per-artifact limit and reserve the bytes in the namespace's usage (see
 * `reserveArtifactBytes`: the namespace lock is held from here to the end of this transaction,
 * which carries no content); then bind the upload to its artifact row (deleting the upload row)
 * and store the terminal projection that binds it. Over quota, the attempt ends `error` /
 * `quota_exceeded` and nothing of the output is kept. Outcome: the commit's answer and whether
 * the upload was bound, or `upload_lost` (nothing written). Retry safety: the row lock makes a
 * concurrent retry wait and then classify as `replayed`.
 */
async function bindStaged(
  db: Db,
  row: Candidate,
  staged: StagedArtifact | undefined,
  policy: ResultPolicy,
): Promise<{ committed: CommittedTerminal; bound: boolean } | 'upload_lost'> {
  const { input, projection } = row
  const artifact = projection.artifact
  if (artifact === undefined) throw new Error('bindStaged needs a result with an artifact')
  return db
    .transaction()
    .execute(async (trx) => {
      const locked = await sql<AttemptState>`
        select ${STATE_COLUMNS} from attempts a where a.id = ${input.attemptId} for update
      `.execute(trx)
      const state = locked.rows[0]
      const refusal = classify(state, row, policy)
      if (refusal !== undefined || state === undefined) {
        return { committed: { outcome: refusal ?? 'missing' }, bound: false }
      }
      const limits = await artifactLimitsFor(trx, state.namespace_id, policy)
      const admitted =
        staged !== undefined &&
        staged.bytes <= limits.artifactMaxBytes &&
        (await reserveArtifactBytes(trx, state.namespace_id, staged.bytes, limits))
      if (admitted) {
        const bound = await sql`
          with u as (
            delete from artifact_uploads
            where id = ${staged.uploadId} and session_id = ${staged.sessionId}
              and attempt_id = ${input.attemptId} and bytes = ${staged.bytes} and digest = ${staged.digest}
            returning id, bytes, digest
          )
          insert into artifacts (id, namespace_id, session_id, attempt_id, upload_id, chunk_bytes,
                                 preview, bytes, digest, expires_at)
          select ${artifact.artifactId}, ${state.namespace_id}, ${state.session_id},
                 ${input.attemptId}, u.id,
                 ${ARTIFACT_CHUNK_BYTES}, ${projection.outputPreview}, u.bytes, u.digest,
                 now() + ${artifact.retentionMs} * interval '1 millisecond'
          from u
          returning id
        `.execute(trx)
        if (bound.rows.length === 0) throw new UploadLost()
      }
      const chosen = admitted ? row : overQuota(input, policy, projection)
      const applied = await applyTerminals(trx, [chosen], policy)
      if (!applied.has(input.attemptId)) {
        throw new Error('a terminal commit did not apply under its own row lock')
      }
      return { committed: committedAnswer(applied.get(input.attemptId)), bound: admitted }
    })
    .catch((error: unknown) => {
      if (error instanceof UploadLost) return 'upload_lost' as const
      throw error
    })
}

/** The staged upload is gone (collected by expiry): the transaction rolls back, nothing written. */
class UploadLost extends Error {
  constructor() {
    super('the staged artifact upload was collected before its commit')
  }
}

function committedAnswer(row: AttemptReadRow | undefined): CommittedTerminal {
  if (row === undefined) return { outcome: 'committed' }
  return row.parent_run_id === null
    ? { outcome: 'committed', record: toAttemptRecord(row) }
    : {
        outcome: 'committed',
        parentSession: { namespaceId: row.namespace_id, sessionId: row.session_id },
      }
}

const STATE_COLUMNS = sql`
  a.id, a.status, a.fingerprint, a.owner_id, a.owner_generation, a.namespace_id, a.session_id,
  coalesce(a.lease_expires_at > now(), false) as lease_live,
  ${historyLength(sql.ref('a.agent_id'))} as context_length,
  ${historyBytes(sql.ref('a.agent_id'))} as history_bytes,
  (select n.agent_history_max_bytes from namespaces n where n.id = a.namespace_id) as history_limit
`

/**
 * Why a commit cannot apply to an attempt in `state`, or `undefined` when it can: the one
 * classification of a fenced terminal commit, shared by both paths.
 */
function classify(
  state: AttemptState | undefined,
  row: Candidate,
  policy: Pick<ResultPolicy, 'agentHistoryMaxBytes'>,
): Exclude<CommitTerminalOutcome, 'committed'> | undefined {
  if (state === undefined) return 'missing'
  if (state.status === 'terminal') {
    return state.fingerprint !== null && row.replayFingerprints.includes(state.fingerprint)
      ? 'replayed'
      : 'refused'
  }
  if (state.owner_id !== row.input.ownerId || state.owner_generation !== row.input.ownerGeneration)
    return 'stale_fence'
  if (!state.lease_live) return 'lease_lost'
  const context = row.projection.context
  if (context !== undefined && context.baseSeq !== state.context_length) return 'history_conflict'
  const limit = Number(state.history_limit ?? policy.agentHistoryMaxBytes)
  if (context !== undefined && Number(state.history_bytes) + row.historyBytes > limit) {
    return 'history_too_large'
  }
  return undefined
}

/**
 * The fenced terminal statement: applies each row whose fence holds and whose delta extends its
 * agent's history, with its audit row and history events. Answers the attempts it applied, each
 * read as it left it (its delivery excepted: see `CommittedTerminal`).
 */
async function applyTerminals(
  db: Db,
  rows: readonly Candidate[],
  policy: Pick<ResultPolicy, 'agentHistoryMaxBytes'>,
): Promise<ReadonlyMap<string, AttemptReadRow>> {
  const delta = rows.flatMap(({ input, storedEvents }) => {
    let bytes = 0
    return storedEvents.map((event, offset) => {
      bytes += Buffer.byteLength(event, 'utf8')
      return {
        attemptId: input.attemptId,
        seq: (input.result.history?.baseSeq ?? 0) + offset,
        event,
        // The delta's size up to and including this event; the agent's size before it is added.
        bytes,
      }
    })
  })
  const appending = rows.filter((r) => r.projection.context !== undefined)
  // A lone commit (every commit of a child that ends on its own) matches `id = $1`, with its
  // status a parameter, so its one generic plan finds the attempt by primary key. Joined to the
  // input array with the literal status, that plan scanned the running attempts' index whole:
  // every running attempt per commit, which looks cheapest while the statistics count few of them
  // (a new deployment, or a surge of long children since the last analyze). A batch is joined to
  // its input rows, as before.
  const [only] = rows
  const target =
    rows.length === 1 && only !== undefined
      ? sql`where a.id = ${only.input.attemptId} and i.id = a.id and a.status = ${'running'}`
      : sql`where a.id = i.id and a.status = 'running'`
  const applied = await sql<AttemptReadRow>`
    with i as (${terminalInput(
      rows.map((r) => ({
        ...r,
        ownerId: r.input.ownerId,
        usageTokens: r.input.result.usageTokens,
      })),
    )}),
    hb as (
      select * from unnest(
        ${appending.map((r) => r.input.attemptId)}::uuid[],
        ${appending.map((r) => r.historyBytes)}::bigint[]
      ) as hb(id, bytes)
    ),
    c as (
      update attempts a
      set ${SET_TERMINAL_FROM_INPUT}
      from i
      ${target}
        and a.owner_id = i.owner_id
        and a.owner_generation = i.generation
        and a.lease_expires_at > now()
        and (i.context_base is null or i.context_base = ${historyLength(sql.ref('a.agent_id'))})
        and (i.context_base is null
             or ${historyBytes(sql.ref('a.agent_id'))}
                + coalesce((select hb.bytes from hb where hb.id = a.id), 0)
                <= coalesce((select n.agent_history_max_bytes from namespaces n
                             where n.id = a.namespace_id), ${policy.agentHistoryMaxBytes}::bigint))
      returning a.*, ${historyBytes(sql.ref('a.agent_id'))} as history_before
    ), t as (
      insert into attempt_transitions (attempt_id, session_id, from_status, to_status, event, owner_id,
                                       owner_generation)
      select id, session_id, 'running', 'terminal', 'committed', owner_id, owner_generation from c
    ), e as (
      insert into agent_context_events (agent_id, session_id, seq, attempt_id, event, total_bytes)
      select c.agent_id, c.session_id, d.seq, d.attempt_id, d.event, c.history_before + d.bytes
      from unnest(
        ${delta.map((d) => d.attemptId)}::uuid[],
        ${delta.map((d) => d.seq)}::int[],
        ${delta.map((d) => d.event)}::jsonb[],
        ${delta.map((d) => d.bytes)}::bigint[]
      ) as d(attempt_id, seq, event, bytes)
      join c on c.id = d.attempt_id
    )
    select ${UNDELIVERED_READ_COLUMNS}
    from c a left join artifacts art on art.id = a.artifact_id
  `.execute(db)
  return new Map(applied.rows.map((row) => [row.id, row]))
}
