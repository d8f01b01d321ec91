import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BatonError,
  DashboardLimits,
  ErrorCode,
  dashboardOverviewSchema,
  dashboardSessionSchema,
  dashboardSessionsSchema,
  dashboardTimelineSchema,
  namespaceIdSchema,
  sessionIdSchema,
  uuidSchema,
  type DashboardOverview,
  type DashboardSessions,
} from '@baton/contracts'
import {
  countAttemptStates,
  countRetentionDue,
  getAttemptTimeline,
  getSessionRuns,
  listActiveSessions,
  listLiveLeases,
  listRecentTerminals,
  readAttemptActivity,
} from '@baton/store'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { type AttemptQueue, type AttemptQueues, type SessionKey } from '@baton/queue'
import type { ApiDeps } from '../deps.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answer, answers } from '../http/route-answers.ts'
import { toDashboardSession, toDashboardTimeline } from '../services/dashboard-view.ts'

/** The page's address; its JSON lives under `${DASHBOARD_PAGE_PATH}/api`. */
const DASHBOARD_PAGE_PATH = '/admin'

/**
 * The ledger dashboard: one static page at `/admin` over its JSON routes, all behind the admin key
 * (http/caller.ts; Basic with the admin key as password, so a browser can open it). Every read is
 * bounded (see `DashboardLimits`) and served from `deps.dashboardDb` (a standby when
 * `DATABASE_READ_URL` is set), so it may show the ledger a replay lag behind. `queueDashboardPath` is where the queue dashboard is mounted:
 * an attempt's job there is `<path>/queue/<queue name>/<attempt id>`.
 */
export function dashboardRoutes(
  deps: ApiDeps,
  options: { readonly queueDashboardPath: string },
): FastifyPluginAsyncZod {
  const jobPathPrefix = (queue: AttemptQueue) =>
    `${options.queueDashboardPath}/queue/${encodeURIComponent(boardName(deps.queues, queue))}/`
  return async (app) => {
    // Read once, when the API starts; the page is a file of plain HTML and JS, no build step.
    const page = readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8')
    const csp = contentSecurityPolicy(page)
    for (const url of [DASHBOARD_PAGE_PATH, `${DASHBOARD_PAGE_PATH}/`]) {
      app.get(url, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .header('content-type', 'text/html; charset=utf-8')
          .header('content-security-policy', csp)
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .header('referrer-policy', 'no-referrer')
          .send(page),
      )
    }

    app.get(
      `${DASHBOARD_PAGE_PATH}/api/overview`,
      {
        schema: {
          operationId: 'getDashboardOverview',
          tags,
          summary: 'Ledger overview',
          description:
            'Across namespaces: attempts by state, live leases, recent terminals and the last ' +
            'hour minute by minute, each read bounded (the answer names its bounds). The `/admin` ' +
            'page refreshes from it.',
          security: ADMIN_SECURITY,
          response: answers(
            { 200: answer('The ledger at a glance', dashboardOverviewSchema) },
            Refusals.admin,
          ),
        },
      },
      async (): Promise<DashboardOverview> => {
        const [counts, live, terminals, activity, retention] = await Promise.all([
          countAttemptStates(deps.dashboardDb, {
            cap: DashboardLimits.stateCountCap,
            terminalWindow: DashboardLimits.terminalWindow,
            transitionScan: DashboardLimits.transitionScan,
          }),
          listLiveLeases(deps.dashboardDb, { limit: DashboardLimits.liveLeases }),
          listRecentTerminals(deps.dashboardDb, {
            limit: DashboardLimits.recentTerminals,
            transitionScan: DashboardLimits.transitionScan,
          }),
          readAttemptActivity(deps.dashboardDb, { minutes: DashboardLimits.activityMinutes }),
          countRetentionDue(deps.dashboardDb, {
            defaultRetentionMs: deps.config.ledgerRetentionMs,
            cap: DashboardLimits.retentionDueCap,
          }),
        ])
        const total = (status: string) =>
          counts.filter((c) => c.status === status).reduce((sum, c) => sum + c.count, 0)
        return {
          now: live.now.toISOString(),
          states: {
            counts,
            capped:
              total('accepted') >= DashboardLimits.stateCountCap ||
              total('running') >= DashboardLimits.stateCountCap,
            stateCountCap: DashboardLimits.stateCountCap,
            terminalWindow: DashboardLimits.terminalWindow,
            transitionScan: DashboardLimits.transitionScan,
          },
          leases: live.leases.map((l) => ({
            ...l,
            startedAt: l.startedAt?.toISOString() ?? null,
            leaseExpiresAt: l.leaseExpiresAt?.toISOString() ?? null,
            heartbeatAt: l.heartbeatAt?.toISOString() ?? null,
            cancelRequestedAt: l.cancelRequestedAt?.toISOString() ?? null,
          })),
          terminals: terminals.map((t) => ({
            ...t,
            terminalAt: t.terminalAt?.toISOString() ?? null,
          })),
          activity: activity.minutes.map((m) => ({ ...m, minute: m.minute.toISOString() })),
          // The first partition's (the only one unless `QUEUE_PARTITIONS` is set): an attempt's
          // own is in its timeline.
          jobPathPrefix: jobPathPrefix(deps.queues.partitions[0] as AttemptQueue),
          retention,
          retentionDueCap: DashboardLimits.retentionDueCap,
        }
      },
    )

    app.get(
      `${DASHBOARD_PAGE_PATH}/api/attempts/:attemptId/timeline`,
      {
        schema: {
          operationId: 'getAttemptTimeline',
          tags,
          summary: "An attempt's timeline",
          description:
            'One attempt of any namespace: its transitions, steering, cancel request, terminal ' +
            'outcome, artifact and continuation, and the path of its job in the queue dashboard.',
          security: ADMIN_SECURITY,
          params: z.strictObject({ attemptId: uuidSchema }),
          response: answers(
            { 200: answer("The attempt's timeline", dashboardTimelineSchema) },
            Refusals.admin,
            Refusals.params,
            [ErrorCode.AttemptNotFound],
          ),
        },
      },
      async (request) => {
        const { attemptId } = request.params
        const record = await getAttemptTimeline(deps.dashboardDb, attemptId, {
          limit: DashboardLimits.timelineEntries,
          messageChars: DashboardLimits.messagePreviewChars,
        })
        if (record === undefined) {
          throw new BatonError(ErrorCode.AttemptNotFound, `no attempt ${attemptId}`)
        }
        const session: SessionKey = record.attempt
        return toDashboardTimeline(record, `${jobPathPrefix(deps.queues.of(session))}${attemptId}`)
      },
    )

    app.get(
      `${DASHBOARD_PAGE_PATH}/api/sessions`,
      {
        schema: {
          operationId: 'listDashboardSessions',
          tags,
          summary: 'Recently active sessions',
          description:
            'Across namespaces, the sessions whose attempts (hosted runs included) were accepted, ' +
            'started or ended most recently, each with its profile when hosted. Read from a ' +
            'bounded number of recent attempts (the answer names its bounds).',
          security: ADMIN_SECURITY,
          response: answers(
            {
              200: answer('The sessions, the most recently active first', dashboardSessionsSchema),
            },
            Refusals.admin,
          ),
        },
      },
      async (): Promise<DashboardSessions> => {
        const sessions = await listActiveSessions(deps.dashboardDb, {
          limit: DashboardLimits.sessions,
          scan: DashboardLimits.sessionActivityScan,
        })
        return {
          sessions: sessions.map((s) => ({
            ...s,
            createdAt: s.createdAt.toISOString(),
            deletedAt: s.deletedAt?.toISOString() ?? null,
            activeAt: s.activeAt.toISOString(),
          })),
          limit: DashboardLimits.sessions,
          activityScan: DashboardLimits.sessionActivityScan,
        }
      },
    )

    app.get(
      `${DASHBOARD_PAGE_PATH}/api/sessions/:namespaceId/:sessionId`,
      {
        schema: {
          operationId: 'getDashboardSession',
          tags,
          summary: "A session's runs and their children",
          description:
            'One session of any namespace: its runs in the order they were admitted (trigger, ' +
            'state, when each was queued, started and ended; a continuation with the child whose ' +
            'result it carries) and the children each run delegated (agent, subagent, attempt ' +
            'state). The last runs and the first children of each are shown, as the answer says.',
          security: ADMIN_SECURITY,
          params: z.strictObject({ namespaceId: namespaceIdSchema, sessionId: sessionIdSchema }),
          response: answers(
            { 200: answer("The session's runs", dashboardSessionSchema) },
            Refusals.admin,
            Refusals.params,
            [ErrorCode.SessionNotFound],
          ),
        },
      },
      async (request) => {
        const { namespaceId, sessionId } = request.params
        const record = await getSessionRuns(deps.dashboardDb, namespaceId, sessionId, {
          runs: DashboardLimits.sessionRuns,
          children: DashboardLimits.runChildren,
        })
        if (record === undefined) {
          throw new BatonError(
            ErrorCode.SessionNotFound,
            `no session ${sessionId} in namespace ${namespaceId}`,
          )
        }
        return toDashboardSession(record)
      },
    )
  }
}

/**
 * The page may run its own inline script (by its hash) and talk to this origin only: data the
 * ledger holds (names, steering text) can never become markup or script, even by a slip.
 */
function contentSecurityPolicy(page: string): string {
  const script = /<script>([\s\S]*?)<\/script>/.exec(page)?.[1]
  if (script === undefined) throw new Error('dashboard.html has no inline script')
  const hash = createHash('sha256').update(script, 'utf8').digest('base64')
  return [
    "default-src 'none'",
    `script-src 'sha256-${hash}'`,
    "style-src 'unsafe-inline'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/** The dashboard's JSON routes take the admin key (Bearer, or Basic as the page's browser sends). */
const ADMIN_SECURITY = [{ adminKey: [] }]
const tags: readonly ApiTag[] = ['Dashboard']

/**
 * The queue dashboard's name of a partition's queue: the queue's own name when there is one
 * partition, `p<i>:<name>` for each of several (their queues share a name under different
 * prefixes, and the dashboard needs one name each).
 */
function boardName(queues: AttemptQueues, queue: AttemptQueue): string {
  if (queues.partitions.length <= 1) return queue.name
  return `p${queues.partitions.indexOf(queue)}:${queue.name}`
}

/** Every partition's queue, as the queue dashboard lists them (with their counts). */
export function boardQueues(queues: AttemptQueues): BullMQAdapter[] {
  return queues.partitions.map((queue) => {
    const name = boardName(queues, queue)
    return new BullMQAdapter(queue, { prefix: name.slice(0, name.length - queue.name.length) })
  })
}
