import type { DashboardSession, DashboardTimeline, DashboardTimelineEntry } from '@baton/contracts'
import type { AttemptTimelineRecord, SessionRunsRecord } from '@baton/store'

/** The order of entries that share a time: the order in which the ledger records them. */
const KIND_ORDER: Readonly<Record<DashboardTimelineEntry['kind'], number>> = {
  transition: 0,
  steering: 1,
  cancel_requested: 2,
  artifact: 3,
  terminal: 4,
  continuation: 5,
}

const iso = (date: Date | null): string | null => date?.toISOString() ?? null

/**
 * One attempt's ledger record as a timeline: its transitions, steering messages, cancel request,
 * artifact, terminal outcome and continuation, in time order (database clock).
 */
export function toDashboardTimeline(
  record: AttemptTimelineRecord,
  jobPath: string,
): DashboardTimeline {
  const a = record.attempt
  const entries: DashboardTimelineEntry[] = []
  for (const t of record.transitions) {
    entries.push({
      at: t.at.toISOString(),
      kind: 'transition',
      summary: `${t.fromStatus ?? 'new'} → ${t.toStatus} (${t.event})`,
      fields: {
        event: t.event,
        from: t.fromStatus,
        to: t.toStatus,
        owner: t.ownerId,
        generation: t.ownerGeneration,
      },
    })
  }
  for (const m of record.messages) {
    entries.push({
      at: m.createdAt.toISOString(),
      kind: 'steering',
      summary: `steering message ${m.sequence}`,
      fields: { sequence: m.sequence, content: m.content, deliveredAt: iso(m.deliveredAt) },
    })
  }
  if (a.cancelRequestedAt !== null) {
    entries.push({
      at: a.cancelRequestedAt.toISOString(),
      kind: 'cancel_requested',
      summary: 'cancel requested',
      fields: { reason: a.cancelReason },
    })
  }
  const artifact = record.artifact
  if (artifact !== null) {
    entries.push({
      at: artifact.createdAt.toISOString(),
      kind: 'artifact',
      summary: `artifact of ${artifact.bytes} bytes`,
      fields: {
        artifactId: artifact.artifactId,
        bytes: artifact.bytes,
        digest: artifact.digest,
        expiresAt: artifact.expiresAt.toISOString(),
        expiredAt: iso(artifact.expiredAt),
        expired: artifact.expiredAt !== null || artifact.expiresAt <= record.now,
      },
    })
  }
  if (a.terminalAt !== null) {
    entries.push({
      at: a.terminalAt.toISOString(),
      kind: 'terminal',
      summary: `terminal: ${a.stopReason ?? 'unknown'}`,
      fields: {
        stopReason: a.stopReason,
        failureCategory: a.failureCategory,
        outputBytes: a.outputBytes,
        outputTruncated: a.outputTruncated,
        digest: a.outputDigest,
      },
    })
  }
  const c = record.continuation
  if (c !== null) {
    entries.push({
      at: c.admittedAt.toISOString(),
      kind: 'continuation',
      summary: `continuation ${c.state}`,
      fields: {
        state: c.state,
        parentRunId: c.parentRunId,
        continuationRunId: c.run?.runId ?? null,
        continuationRunStatus: c.run?.status ?? null,
        consumerRunId: c.consumerRunId,
        claimGeneration: c.claimGeneration,
        claimDeadline: iso(c.claimDeadline),
        suppressionReason: c.suppressionReason,
        suppressionRunId: c.suppressionRunId,
        inputDigest: c.inputDigest,
        deliveredAt: iso(c.deliveredAt),
      },
    })
  }
  entries.sort((x, y) =>
    x.at === y.at ? KIND_ORDER[x.kind] - KIND_ORDER[y.kind] : x.at < y.at ? -1 : 1,
  )
  return {
    now: record.now.toISOString(),
    attempt: {
      attemptId: a.attemptId,
      namespaceId: a.namespaceId,
      sessionId: a.sessionId,
      agentId: a.agentId,
      name: a.name,
      status: a.status,
      ownerId: a.ownerId,
      ownerGeneration: a.ownerGeneration,
      leaseExpiresAt: iso(a.leaseExpiresAt),
      parentRunId: a.parentRunId,
      stopReason: a.stopReason,
      failureCategory: a.failureCategory,
    },
    entries,
    truncated: record.truncated,
    jobPath,
  }
}

/** One session's runs, in admission order, each with its children, as the dashboard shows them. */
export function toDashboardSession(record: SessionRunsRecord): DashboardSession {
  const s = record.session
  return {
    now: record.now.toISOString(),
    session: {
      namespaceId: s.namespaceId,
      sessionId: s.sessionId,
      profile: s.profile,
      parentAgentId: s.parentAgentId,
      createdAt: s.createdAt.toISOString(),
      deletedAt: iso(s.deletedAt),
    },
    runs: record.runs.map((r) => ({
      runId: r.runId,
      triggerType: r.triggerType,
      status: r.status,
      hosted: r.hosted,
      cause: r.cause,
      createdAt: r.createdAt.toISOString(),
      startedAt: iso(r.startedAt),
      endedAt: iso(r.endedAt),
      children: r.children.map((c) => ({
        ...c,
        acceptedAt: c.acceptedAt.toISOString(),
        terminalAt: iso(c.terminalAt),
      })),
      childrenTruncated: r.childrenTruncated,
    })),
    earlierRuns: record.earlierRuns,
  }
}
