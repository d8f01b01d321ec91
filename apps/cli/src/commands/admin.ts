// Namespace and key management: these commands need the admin key (BATON_API_KEY or --api-key).
import type {
  ApiKeyView,
  NamespaceLimitsView,
  NamespaceView,
  StoredNamespaceLimits,
} from '@baton/contracts'
import { ANSWER_GRACE_MS, type CommandContext } from '../command-context.ts'
import { ExitCode } from '../exit-codes.ts'

const call = { timeoutMs: ANSWER_GRACE_MS }

export async function createNamespace(
  ctx: CommandContext,
  namespaceId: string,
  description: string | undefined,
): Promise<ExitCode> {
  const created = await ctx.client.admin.createNamespace(namespaceId, description, call)
  ctx.print(created, () => `namespace ${created.namespaceId} created`)
  return ExitCode.Ok
}

export async function listNamespaces(ctx: CommandContext): Promise<ExitCode> {
  const answer = await ctx.client.admin.listNamespaces(call)
  ctx.print(answer, () => table(answer.namespaces.map(namespaceLine)))
  return ExitCode.Ok
}

export async function issueKey(
  ctx: CommandContext,
  namespaceId: string,
  name: string,
): Promise<ExitCode> {
  const issued = await ctx.client.admin.issueKey(namespaceId, name, call)
  // The key itself goes to stdout alone, so `KEY=$(baton keys create ns name)` works; the rest is
  // said on stderr.
  ctx.print(issued, () => issued.key)
  if (!ctx.json) {
    ctx.io.stderr.write(
      `baton: key ${issued.keyId} (${issued.prefix}…) of namespace ${issued.namespaceId}; ` +
        'this is the only time it is shown\n',
    )
  }
  return ExitCode.Ok
}

export async function listKeys(ctx: CommandContext, namespaceId: string): Promise<ExitCode> {
  const answer = await ctx.client.admin.listKeys(namespaceId, call)
  ctx.print(answer, () => table(answer.keys.map(keyLine)))
  return ExitCode.Ok
}

export async function revokeKey(ctx: CommandContext, keyId: string): Promise<ExitCode> {
  const revoked = await ctx.client.admin.revokeKey(keyId, call)
  ctx.print(revoked, () => `key ${revoked.keyId} (${revoked.prefix}…) revoked`)
  return ExitCode.Ok
}

export async function showLimits(ctx: CommandContext, namespaceId: string): Promise<ExitCode> {
  const view = await ctx.client.admin.getNamespaceLimits(namespaceId, call)
  ctx.print(view, () => limitsText(view))
  return ExitCode.Ok
}

/** Replaces the namespace's limits: one not given falls back to the default. */
export async function setLimits(
  ctx: CommandContext,
  namespaceId: string,
  limits: Partial<StoredNamespaceLimits>,
): Promise<ExitCode> {
  const view = await ctx.client.admin.setNamespaceLimits(namespaceId, limits, call)
  ctx.print(view, () => limitsText(view))
  return ExitCode.Ok
}

function limitsText(view: NamespaceLimitsView): string {
  const line = (name: keyof StoredNamespaceLimits) => {
    const stored = view.limits[name]
    return stored === null ? `${name}  ${view.defaults[name]} (default)` : `${name}  ${stored}`
  }
  return [
    line('artifactQuotaBytes'),
    line('artifactMaxBytes'),
    line('agentHistoryMaxBytes'),
    line('ledgerRetentionMs'),
  ].join('\n')
}

function namespaceLine(n: NamespaceView): string {
  return [n.namespaceId, n.createdAt, n.description ?? ''].join('  ')
}

function keyLine(k: ApiKeyView): string {
  return [
    k.keyId,
    `${k.prefix}…`,
    k.revokedAt === null ? 'live' : `revoked ${k.revokedAt}`,
    k.name,
  ].join('  ')
}

function table(lines: readonly string[]): string {
  return lines.length === 0 ? '(none)' : lines.join('\n')
}
