import { createHash } from 'node:crypto'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { BatonError, ErrorCode, uuidSchema } from '@baton/contracts'
import { loadArtifact, type ArtifactLoad, type ByteRange } from '@baton/store'
import type { ApiDeps } from '../deps.ts'
import { callerNamespace } from '../http/caller.ts'
import type { ApiTag } from '../http/openapi.ts'
import { Refusals, answers } from '../http/route-answers.ts'

const params = z.strictObject({ artifactId: uuidSchema })
const tags: readonly ApiTag[] = ['Artifacts']

/** The header carrying Baton's own digest (`resultDigest`) of the complete content. */
export const DIGEST_HEADER = 'baton-digest'

const CONTENT = { 'text/plain; charset=utf-8': { schema: z.string() } }
const REPR_DIGEST_HEADER = {
  'repr-digest': {
    description: 'RFC 9530: `sha-256=:<base64>:`, the SHA-256 of the complete content',
    type: 'string' as const,
  },
}
const CONTENT_HEADERS = {
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
            "The complete output's bytes, checked against the digest its attempt's terminal " +
            'commit bound before a byte is sent (never sent when they differ). One byte range ' +
            '(`Range: bytes=a-b`, `bytes=a-`, `bytes=-n`) is answered with `206`, reading and ' +
            'verifying only the stored chunks that cover it; a range beyond the content with ' +
            '`416`; several ranges or a malformed header get the whole content. An expired ' +
            'artifact keeps its evidence (size, digest, expiry) in the `410` body.',
          params,
          response: answers(
            {
              200: {
                description: "The complete output's bytes (UTF-8 text)",
                content: CONTENT,
                headers: { ...CONTENT_HEADERS, ...REPR_DIGEST_HEADER },
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
            [
              ErrorCode.ArtifactNotFound,
              ErrorCode.ArtifactExpired,
              ErrorCode.ArtifactIntegrity,
              ErrorCode.RangeNotSatisfiable,
            ],
          ),
        },
      },
      async (request, reply) => {
        const { artifactId } = request.params
        const header = request.headers.range
        const load = await loadArtifact(deps.db, callerNamespace(request), artifactId, (size) =>
          byteRange(header, size),
        )
        if (load.kind === 'corrupt') {
          request.log.error({ artifactId }, 'artifact content does not match its digest')
        }
        if (load.kind === 'unsatisfiable') {
          void reply.header('content-range', `bytes */${load.artifact.bytes}`)
        }
        if (load.kind !== 'content') throw loadError(load, artifactId)
        const { content, artifact, range } = load
        void reply
          .header('content-type', 'text/plain; charset=utf-8')
          .header('accept-ranges', 'bytes')
          .header(DIGEST_HEADER, artifact.digest)
        if (range === undefined) {
          return reply
            .header(
              'repr-digest',
              `sha-256=:${createHash('sha256').update(content).digest('base64')}:`,
            )
            .send(content)
        }
        return reply
          .status(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${artifact.bytes}`)
          .send(content)
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
    case 'unsatisfiable':
      return new BatonError(
        ErrorCode.RangeNotSatisfiable,
        `the range holds no byte of the artifact's ${load.artifact.bytes}`,
        { details: { artifactId, bytes: load.artifact.bytes } },
      )
    default: {
      const never: never = load
      throw new Error(`unexpected artifact load ${JSON.stringify(never)}`)
    }
  }
}

/**
 * The one byte range a `Range` header asks for (`bytes=a-b`, `bytes=a-`, `bytes=-n`, inclusive,
 * clipped to the content), `unsatisfiable` when it holds no byte of content of `length` bytes
 * (`416`), or `undefined` when the header is absent, names several ranges or is malformed: then
 * the whole content is sent, as HTTP allows.
 */
export function byteRange(
  header: string | undefined,
  length: number,
): ByteRange | 'unsatisfiable' | undefined {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return undefined
  const [, first = '', last = ''] = match
  if (first === '' && last === '') return undefined
  if (first === '') {
    const suffix = Number(last)
    return suffix === 0 || length === 0
      ? 'unsatisfiable'
      : { start: Math.max(0, length - suffix), end: length - 1 }
  }
  const start = Number(first)
  if (last !== '' && Number(last) < start) return undefined
  if (start >= length) return 'unsatisfiable'
  return { start, end: last === '' ? length - 1 : Math.min(Number(last), length - 1) }
}
