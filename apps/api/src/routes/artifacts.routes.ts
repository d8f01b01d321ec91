import { createHash } from 'node:crypto'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { BatonError, ErrorCode, uuidSchema } from '@baton/contracts'
import { loadArtifact, type ArtifactLoad } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answers } from '../http/route-answers.ts'

const params = z.strictObject({ artifactId: uuidSchema })
const tags: readonly ApiTag[] = ['Artifacts']

/** The header carrying Baton's own digest (`resultDigest`) of the complete content. */
export const DIGEST_HEADER = 'baton-digest'

const CONTENT = { 'text/plain; charset=utf-8': { schema: z.string() } }
const CONTENT_HEADERS = {
  'repr-digest': {
    description: 'RFC 9530: `sha-256=:<base64>:`, the SHA-256 of the complete content',
    type: 'string' as const,
  },
  [DIGEST_HEADER]: {
    description: "Baton's result digest of the complete content (the view's `digest`)",
    type: 'string' as const,
  },
  'accept-ranges': { description: '`bytes`', type: 'string' as const },
}

export function artifactRoutes(deps: ApiDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/artifacts/:artifactId',
      {
        schema: {
          operationId: 'readArtifact',
          tags,
          summary: "Read an attempt's complete output",
          description:
            "The complete output's bytes, checked against the digest stored with them before a " +
            'byte is sent (never sent when they differ). One byte range (`Range: bytes=a-b`) is ' +
            'answered with `206`; anything else gets the whole content. An expired artifact keeps ' +
            'its evidence (size, digest, expiry) in the `410` body.',
          params,
          response: answers(
            {
              200: {
                description: "The complete output's bytes (UTF-8 text)",
                content: CONTENT,
                headers: CONTENT_HEADERS,
              },
              206: {
                description: 'The one byte range asked for with `Range: bytes=a-b`',
                content: CONTENT,
                headers: {
                  ...CONTENT_HEADERS,
                  'content-range': { description: '`bytes a-b/size`', type: 'string' as const },
                },
              },
            },
            Refusals.tenant,
            Refusals.params,
            [ErrorCode.ArtifactNotFound, ErrorCode.ArtifactExpired, ErrorCode.ArtifactIntegrity],
          ),
        },
      },
      async (request, reply) => {
        const { artifactId } = request.params
        const load = await loadArtifact(deps.db, callerNamespace(request), artifactId)
        if (load.kind === 'corrupt') {
          request.log.error({ artifactId }, 'artifact content does not match its digest')
        }
        if (load.kind !== 'content') throw loadError(load, artifactId)
        const { content, artifact } = load
        const range = byteRange(request.headers.range, content.length)
        void reply
          .header('content-type', 'text/plain; charset=utf-8')
          .header('accept-ranges', 'bytes')
          .header(
            'repr-digest',
            `sha-256=:${createHash('sha256').update(content).digest('base64')}:`,
          )
          .header(DIGEST_HEADER, artifact.digest)
        if (range === undefined) return reply.send(content)
        return reply
          .status(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${content.length}`)
          .send(content.subarray(range.start, range.end + 1))
      },
    )
  }
}

/** The error of a load that has no content to serve. */
function loadError(
  load: Exclude<ArtifactLoad, { readonly kind: 'content' }>,
  artifactId: string,
): BatonError {
  switch (load.kind) {
    case 'missing':
      return new BatonError(ErrorCode.ArtifactNotFound, `no artifact ${artifactId}`)
    case 'expired':
      return new BatonError(
        ErrorCode.ArtifactExpired,
        'the artifact expired; its content is deleted',
        {
          details: {
            artifactId,
            bytes: load.artifact.bytes,
            digest: load.artifact.digest,
            expiresAt: load.artifact.expiresAt.toISOString(),
          },
        },
      )
    case 'corrupt':
      return new BatonError(
        ErrorCode.ArtifactIntegrity,
        'the stored artifact does not match its digest; it is not served',
        { details: { artifactId, digest: load.artifact.digest } },
      )
    default: {
      const never: never = load
      throw new Error(`unexpected artifact load ${JSON.stringify(never)}`)
    }
  }
}

/**
 * One satisfiable byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`), inclusive; anything else
 * (several ranges, a malformed or unsatisfiable one) is ignored and the whole content is sent,
 * as HTTP allows.
 */
export function byteRange(
  header: string | undefined,
  length: number,
): { start: number; end: number } | undefined {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return undefined
  const [, first = '', last = ''] = match
  if (first === '' && last === '') return undefined
  const start = first === '' ? Math.max(0, length - Number(last)) : Number(first)
  const end = first === '' || last === '' ? length - 1 : Math.min(Number(last), length - 1)
  if (start > end) return undefined
  return { start, end }
}
