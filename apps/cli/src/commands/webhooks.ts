// A session's webhook (the session's key) or a namespace's (`--namespace`, the admin key), and the
// deliveries made to them.
import type {
  RegisteredWebhook,
  WebhookDeliveryState,
  WebhookDeliveryView,
  WebhookView,
} from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }

/** Whose webhook: a session's, or with `namespace` the namespace's (admin). */
export interface WebhookTarget {
  readonly sessionId?: string
  readonly namespace?: string
}

export async function setWebhook(
  ctx: CommandContext,
  target: WebhookTarget,
  url: string,
  secret: string | undefined,
): Promise<ExitCode> {
  const input = secret === undefined ? { url } : { url, secret }
  const registered: RegisteredWebhook =
    target.namespace === undefined
      ? await ctx.client.registerSessionWebhook(sessionOf(target), input, call)
      : await ctx.client.admin.registerNamespaceWebhook(target.namespace, input, call)
  // The secret goes to stdout alone (`SECRET=$(baton webhooks set …)`); the rest on stderr.
  ctx.print(registered, () => registered.secret)
  if (!ctx.json) {
    ctx.io.stderr.write(
      `baton: webhook ${registered.url} registered; this is the only time its secret is shown\n`,
    )
  }
  return ExitCode.Ok
}

export async function showWebhook(ctx: CommandContext, target: WebhookTarget): Promise<ExitCode> {
  const webhook: WebhookView =
    target.namespace === undefined
      ? await ctx.client.getSessionWebhook(sessionOf(target), call)
      : await ctx.client.admin.getNamespaceWebhook(target.namespace, call)
  ctx.print(webhook, () => `${webhook.url}  (since ${webhook.createdAt})`)
  return ExitCode.Ok
}

export async function removeWebhook(ctx: CommandContext, target: WebhookTarget): Promise<ExitCode> {
  if (target.namespace === undefined) await ctx.client.removeSessionWebhook(sessionOf(target), call)
  else await ctx.client.admin.removeNamespaceWebhook(target.namespace, call)
  ctx.print({ removed: true }, () => 'webhook removed')
  return ExitCode.Ok
}

export async function listDeliveries(
  ctx: CommandContext,
  query: { readonly sessionId?: string; readonly state?: WebhookDeliveryState },
): Promise<ExitCode> {
  const answer = await ctx.client.listWebhookDeliveries(query, call)
  ctx.print(answer, () =>
    answer.deliveries.length === 0 ? '(none)' : answer.deliveries.map(deliveryLine).join('\n'),
  )
  return ExitCode.Ok
}

function deliveryLine(d: WebhookDeliveryView): string {
  return [d.webhookId, d.state, `tries ${d.tries}`, d.lastError ?? ''].join('  ').trimEnd()
}

function sessionOf(target: WebhookTarget): string {
  if (target.sessionId === undefined) throw new Error('name --session or --namespace')
  return target.sessionId
}
