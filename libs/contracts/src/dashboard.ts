import { z } from 'zod'

/**
 * What the ledger dashboard (`/admin`, admin key) reads: views across every namespace, each one
 * bounded. Times are ISO strings on the database clock; `now` is that clock when the view was
 * read, so a page can tick ages from it without trusting the browser's clock.
 */
export const DashboardLimits = {
  /** Counts of accepted and of running attempts stop at this many (per status). */
  stateCountCap: 10_000,
  /** Terminal counts cover the most recent this many terminal transitions. */
  terminalWindow: 1000,
  /**
   * Terminal attempts are found among this many most recent transitions (of any kind), so a
   * ledger whose recent history holds few terminals is never read to its start.
   */
  transitionScan: 50_000,
  liveLeases: 200,
  recentTerminals: 50,
  /** Counts of what ledger retention removes next stop at this many (per namespace and kind). */
  retentionDueCap: 10_000,
  timelineEntries: 200,
  /** Characters of a steering message's text shown in a timeline. */
  messagePreviewChars: 1000,
  /** The activity charts cover this many minutes, the current one included. */
  activityMinutes: 60,
  /** The sessions view lists at most this many sessions, the most recently active first. */
  sessions: 50,
  /**
   * Recent activity is read from at most this many of the attempts that ended last, and as many
   * queued and running ones: a session whose last attempt is older is not listed.
   */
  sessionActivityScan: 2000,
  /** One session's view shows its last this many runs. */
  sessionRuns: 100,
  /** Children shown per run. */
  runChildren: 50,
} as const

/** A count of attempts of one namespace in one state (terminal ones per stop reason). */
export const dashboardStateCountSchema = z.object({
  namespaceId: z.string(),
  status: z.enum(['accepted', 'running', 'terminal']),
  /** Null unless `status` is terminal. */
  stopReason: z.string().nullable(),
  count: z.number().int(),
})

/** A running attempt's lease: its owner, fence and deadline on the database clock. */
export const dashboardLeaseSchema = z.object({
  attemptId: z.string(),
  namespaceId: z.string(),
  agentId: z.string(),
  name: z.string(),
  sessionId: z.string(),
  ownerId: z.string().nullable(),
  ownerGeneration: z.number().int(),
  startedAt: z.string().nullable(),
  leaseExpiresAt: z.string().nullable(),
  /** The owner's claim or latest lease renewal; its age is the heartbeat age. */
  heartbeatAt: z.string().nullable(),
  cancelRequestedAt: z.string().nullable(),
})

export const dashboardTerminalSchema = z.object({
  attemptId: z.string(),
  namespaceId: z.string(),
  name: z.string(),
  stopReason: z.string().nullable(),
  failureCategory: z.string().nullable(),
  terminalAt: z.string().nullable(),
  /** From the claim to the terminal outcome; null when it never ran (cancelled while queued). */
  durationMs: z.number().nullable(),
  outputBytes: z.number().int().nullable(),
})

/**
 * One minute of the ledger's activity, read from the attempts' own times (accepted, claimed,
 * terminal), so every API process answers the same and a restart loses nothing.
 */
export const dashboardActivityMinuteSchema = z.object({
  /** The minute's start. */
  minute: z.string(),
  /** Attempts that became terminal within the minute, per stop reason (a reason absent: none). */
  terminals: z.record(z.string(), z.number().int()),
  /** Attempts accepted and not yet running at the minute's end (the current minute: `now`). */
  queued: z.number().int(),
  /** Attempts running at the minute's end (the current minute: `now`). */
  running: z.number().int(),
  /**
   * From accept to terminal, over the attempts that became terminal within the minute: median
   * and 99th percentile (interpolated), in milliseconds; null when none did.
   */
  waitP50Ms: z.number().nullable(),
  waitP99Ms: z.number().nullable(),
})
export type DashboardActivityMinute = z.infer<typeof dashboardActivityMinuteSchema>

/** `GET /admin/api/overview`. */
export const dashboardOverviewSchema = z.object({
  now: z.string(),
  states: z.object({
    counts: z.array(dashboardStateCountSchema),
    /** Whether accepted or running counts reached `stateCountCap` (then they are lower bounds). */
    capped: z.boolean(),
    stateCountCap: z.number().int(),
    terminalWindow: z.number().int(),
    transitionScan: z.number().int(),
  }),
  leases: z.array(dashboardLeaseSchema),
  terminals: z.array(dashboardTerminalSchema),
  /**
   * The last `activityMinutes` minutes, oldest first; the last is the current minute, still
   * under way.
   */
  activity: z.array(dashboardActivityMinuteSchema),
  /** Where the queue dashboard shows an attempt's job: this path followed by the attempt id. */
  jobPathPrefix: z.string(),
  /**
   * Per namespace, what ledger retention removes next: terminal attempts and ended runs older than
   * its retention, each count at most `retentionDueCap`.
   */
  retention: z.array(
    z.object({
      namespaceId: z.string(),
      retentionMs: z.number().int(),
      attempts: z.number().int(),
      runs: z.number().int(),
    }),
  ),
  retentionDueCap: z.number().int(),
})
export type DashboardOverview = z.infer<typeof dashboardOverviewSchema>

/** One entry of an attempt's timeline, in time order. */
export const dashboardTimelineEntrySchema = z.object({
  at: z.string(),
  kind: z.enum([
    'transition',
    'steering',
    'cancel_requested',
    'terminal',
    'artifact',
    'continuation',
  ]),
  /** Short text for people: the transition's event, the message's sequence, … */
  summary: z.string(),
  /** The facts of the entry, shown as name/value pairs. */
  fields: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
})
export type DashboardTimelineEntry = z.infer<typeof dashboardTimelineEntrySchema>

/** `GET /admin/api/attempts/:attemptId/timeline`. */
export const dashboardTimelineSchema = z.object({
  now: z.string(),
  attempt: z.object({
    attemptId: z.string(),
    namespaceId: z.string(),
    sessionId: z.string(),
    agentId: z.string(),
    name: z.string(),
    status: z.enum(['accepted', 'running', 'terminal']),
    ownerId: z.string().nullable(),
    ownerGeneration: z.number().int(),
    leaseExpiresAt: z.string().nullable(),
    parentRunId: z.string().nullable(),
    stopReason: z.string().nullable(),
    failureCategory: z.string().nullable(),
  }),
  entries: z.array(dashboardTimelineEntrySchema),
  /** Whether transitions or steering messages went beyond `timelineEntries` and were cut. */
  truncated: z.boolean(),
  jobPath: z.string(),
})
export type DashboardTimeline = z.infer<typeof dashboardTimelineSchema>

/** A session as the sessions view lists it. */
export const dashboardSessionSummarySchema = z.object({
  namespaceId: z.string(),
  sessionId: z.string(),
  /** The profile of a hosted session (its parent runs on the fleet); null for a host's session. */
  profile: z.string().nullable(),
  createdAt: z.string(),
  deletedAt: z.string().nullable(),
  /** The latest accept, start or end of one of its attempts (its hosted runs are attempts too). */
  activeAt: z.string(),
})

/** `GET /admin/api/sessions`. */
export const dashboardSessionsSchema = z.object({
  sessions: z.array(dashboardSessionSummarySchema),
  /** At most this many sessions are listed. */
  limit: z.number().int(),
  /** Activity is read from this many recent attempts of each state (see `DashboardLimits`). */
  activityScan: z.number().int(),
})
export type DashboardSessions = z.infer<typeof dashboardSessionsSchema>

/** A child a run delegated: one attempt, under its agent. */
export const dashboardRunChildSchema = z.object({
  attemptId: z.string(),
  agentId: z.string(),
  /** The subagent's name. */
  name: z.string(),
  status: z.enum(['accepted', 'running', 'terminal']),
  stopReason: z.string().nullable(),
  failureCategory: z.string().nullable(),
  acceptedAt: z.string(),
  terminalAt: z.string().nullable(),
})

/** One run of a session, with the children it delegated. */
export const dashboardSessionRunSchema = z.object({
  runId: z.string(),
  triggerType: z.enum(['user', 'async_subagent_result', 'explicit']),
  status: z.enum(['pending', 'active', 'completed', 'failed', 'cancelled']),
  /** Executed by the fleet (a hosted session's run) rather than by a host. */
  hosted: z.boolean(),
  /** A continuation run's cause: the child whose result it carries. */
  cause: z
    .object({ attemptId: z.string(), agentId: z.string().nullable(), name: z.string().nullable() })
    .nullable(),
  /** Admitted (queued, for a hosted run). */
  createdAt: z.string(),
  /** A hosted run's start on the fleet; a host's run starts when it is created. */
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  children: z.array(dashboardRunChildSchema),
  /** Whether the run delegated more than `runChildren` children (the first ones are shown). */
  childrenTruncated: z.boolean(),
})

/** `GET /admin/api/sessions/:namespaceId/:sessionId`: the session, its runs in order. */
export const dashboardSessionSchema = z.object({
  now: z.string(),
  session: dashboardSessionSummarySchema.omit({ activeAt: true }).extend({
    /** A hosted session's parent agent: each of its runs is an attempt of it. */
    parentAgentId: z.string().nullable(),
  }),
  /** In the order they were admitted (the order a hosted session runs them), the last ones. */
  runs: z.array(dashboardSessionRunSchema),
  /** Whether the session has runs before the `sessionRuns` shown. */
  earlierRuns: z.boolean(),
})
export type DashboardSession = z.infer<typeof dashboardSessionSchema>
