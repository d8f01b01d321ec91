import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { BatonApiError } from '@baton/client'
import { resultDigest, type TerminalAttemptView } from '@baton/contracts'
import { describe, eventually, expect, test } from '@baton/testing'
import { auditArtifacts } from '@baton/testing/ledger-audit'

const INLINE = 4096
const MIB = 1024 * 1024

/** The preview the README promises, written independently of the store: whole characters only. */
function expectedPreview(output: string): string {
  let preview = ''
  let bytes = 0
  for (const character of output) {
    bytes += Buffer.byteLength(character)
    if (bytes > INLINE) break
    preview += character
  }
  return preview.replaceAll('\u0000', '\uFFFD')
}

/** The README's digest definition, computed by hand: SHA-256 of the domain, 0x00, the bytes. */
function documentedDigest(bytes: Buffer): string {
  const hash = createHash('sha256').update('baton.result.v1\u0000').update(bytes).digest('hex')
  return `baton.result.v1:sha256:${hash}`
}

/** What the scripted child answers for `{ output, outputBytes }`: `output` repeated and cut. */
function repeated(unit: string, length: number): string {
  return unit.repeat(Math.ceil(length / unit.length)).slice(0, length)
}

const a = (n: number) => 'a'.repeat(n)
interface OutputCase {
  readonly name: string
  readonly script: object
  readonly output: string
}
const EXACT: readonly { readonly name: string; readonly output: string }[] = [
  { name: 'empty', output: '' },
  { name: 'ASCII one byte under the bound', output: a(INLINE - 1) },
  { name: 'ASCII at the bound', output: a(INLINE) },
  { name: 'ASCII one byte over the bound', output: a(INLINE + 1) },
  { name: 'CJK at the bound', output: '日本語'.repeat(INLINE / 9) + 'x' },
  { name: 'CJK one byte over', output: '日本語'.repeat(INLINE / 9) + 'xy' },
  { name: 'emoji straddling the bound', output: `${a(INLINE - 2)}😀 tail` },
  { name: 'emoji ending at the bound', output: `${a(INLINE - 4)}😀` },
  { name: 'U+0000 inside a small output', output: 'a\u0000b' },
  { name: 'U+0000 at the bound', output: `${a(INLINE - 1)}\u0000 and more` },
]
const CASES: readonly OutputCase[] = [
  ...EXACT.map((c) => ({ ...c, script: { output: c.output } })),
  {
    name: '1 MiB of ASCII',
    script: { output: 'abc', outputBytes: MIB },
    output: repeated('abc', MIB),
  },
  {
    name: '1 MiB of emoji and CJK (a pair cut at the end becomes U+FFFD)',
    script: { output: '😀日本x', outputBytes: MIB + 1 },
    output: repeated('😀日本x', MIB + 1).toWellFormed(),
  },
  {
    name: '20 MiB',
    script: { output: 'z', outputBytes: 20 * MIB },
    output: repeated('z', 20 * MIB),
  },
]

describe('results that outlive their size: previews, artifacts and the artifact route', () => {
  test('every output size and kind: preview, outputBytes and digest are right, and the artifact round-trips byte for byte', async ({
    baton,
    db,
  }) => {
    const { client } = await baton()

    for (const c of CASES) {
      const view = (await client.delegateAndWait(
        { sessionId: 'sizes', name: 'scripted', prompt: JSON.stringify(c.script) },
        60_000,
      )) as TerminalAttemptView
      const bytes = Buffer.from(c.output, 'utf8')
      const preview = expectedPreview(c.output)
      const inline = bytes.length <= INLINE && !c.output.includes('\u0000')
      expect({ case: c.name, ...view }).toMatchObject({
        case: c.name,
        status: 'terminal',
        stopReason: 'completed',
        output: inline ? c.output : preview,
        outputTruncated: !inline,
        outputBytes: bytes.length,
        digest: documentedDigest(bytes),
      })
      expect(view.output.isWellFormed()).toBe(true)
      if (inline) {
        expect(view.artifact).toBeNull()
        continue
      }
      expect(view.artifact).toMatchObject({ bytes: bytes.length, digest: view.digest })
      const artifact = await client.readArtifact(view.artifact?.artifactId ?? '')
      expect(Buffer.from(artifact.content).equals(bytes), c.name).toBe(true)
      expect(artifact.digest).toBe(resultDigest(bytes))
    }
    const stored = await sql<{ n: number }>`select count(*)::int as n from artifacts`.execute(db)
    expect(stored.rows[0]?.n).toBe(
      CASES.filter((c) => Buffer.byteLength(c.output) > INLINE || c.output.includes('\u0000'))
        .length,
    )
  })

  test('the route sends the plain SHA-256 in Repr-Digest and serves a byte range (416 beyond the content); expired is 410, a tampered row the integrity error, a foreign or unknown id 404', async ({
    baton,
    db,
  }) => {
    const h = await baton()
    const client = h.client
    const output = `${a(INLINE)} — the end 😀`
    const content = Buffer.from(output)
    const view = (await client.delegateAndWait(
      { sessionId: 'route', name: 'scripted', prompt: JSON.stringify({ output }) },
      30_000,
    )) as TerminalAttemptView
    const artifactId = view.artifact?.artifactId ?? ''
    const url = `${h.base}/v1/artifacts/${artifactId}`

    const whole = await fetch(url, { headers: h.auth })
    expect(whole.status).toBe(200)
    expect(whole.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(whole.headers.get('content-length')).toBe(String(content.length))
    expect(whole.headers.get('repr-digest')).toBe(
      `sha-256=:${createHash('sha256').update(content).digest('base64')}:`,
    )
    expect(whole.headers.get('baton-digest')).toBe(view.digest)
    expect(Buffer.from(await whole.arrayBuffer()).equals(content)).toBe(true)

    const part = await fetch(url, { headers: { ...h.auth, range: 'bytes=4090-4099' } })
    expect(part.status).toBe(206)
    expect(part.headers.get('content-range')).toBe(`bytes 4090-4099/${content.length}`)
    expect(Buffer.from(await part.arrayBuffer()).equals(content.subarray(4090, 4100))).toBe(true)

    // A range that holds no byte of the content: 416, with the size in Content-Range.
    const beyond = await fetch(url, { headers: { ...h.auth, range: `bytes=${content.length}-` } })
    expect(beyond.status).toBe(416)
    expect(beyond.headers.get('content-range')).toBe(`bytes */${content.length}`)
    expect(await beyond.json()).toMatchObject({
      error: { code: 'RANGE_NOT_SATISFIABLE', details: { bytes: content.length } },
    })

    const unknown = await h.get('/v1/artifacts/00000000-0000-4000-8000-000000000000')
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'ARTIFACT_NOT_FOUND' } } })
    // An artifact of another namespace answers exactly like a missing one.
    await sql`insert into namespaces (id) values ('elsewhere')`.execute(db)
    await sql`update artifacts set namespace_id = 'elsewhere' where id = ${artifactId}`.execute(db)
    expect(await h.get(`/v1/artifacts/${artifactId}`)).toMatchObject({
      status: 404,
      body: { error: { code: 'ARTIFACT_NOT_FOUND' } },
    })
    await sql`update artifacts set namespace_id = 'default' where id = ${artifactId}`.execute(db)

    // Tampered content is never sent: a typed integrity error instead.
    await sql`
      update artifact_chunks set content = ${Buffer.from(output.replace('end', 'END'))}
      where upload_id = (select upload_id from artifacts where id = ${artifactId})
    `.execute(db)
    const tampered = await fetch(url, { headers: h.auth })
    expect(tampered.status).toBe(500)
    expect(await tampered.json()).toMatchObject({ error: { code: 'ARTIFACT_INTEGRITY' } })
    await expect(client.readArtifact(artifactId)).rejects.toMatchObject({
      code: 'ARTIFACT_INTEGRITY',
    })

    // Past its deadline on the database clock the content is not served, whether or not the
    // expiry job has deleted it yet.
    await sql`update artifacts set expires_at = now() - interval '1 second' where id = ${artifactId}`.execute(
      db,
    )
    const expired = await h.get(`/v1/artifacts/${artifactId}`)
    expect(expired).toMatchObject({
      status: 410,
      body: {
        error: {
          code: 'ARTIFACT_EXPIRED',
          details: { artifactId, bytes: content.length, digest: view.digest },
        },
      },
    })
    const error = await client.readArtifact(artifactId).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BatonApiError)
    expect(error).toMatchObject({ status: 410, code: 'ARTIFACT_EXPIRED' })
    // The worker's reconciler deletes the content of due artifacts and keeps the evidence.
    await eventually(
      async () => {
        const row = await sql<{ gone: boolean }>`
          select expired_at is not null
                 and not exists (select 1 from artifact_chunks c where c.upload_id = ar.upload_id)
                 as gone
          from artifacts ar where id = ${artifactId}
        `.execute(db)
        return row.rows[0]?.gone === true ? true : undefined
      },
      { what: 'the retention pass to delete the content' },
    )
    // Its bytes are freed: every namespace's usage is again the sum of its stored artifacts.
    expect(await auditArtifacts(db)).toMatchObject({ bad: 0 })
    // The view keeps the evidence.
    expect(await client.getAttempt(view.attemptId)).toMatchObject({
      digest: view.digest,
      outputBytes: content.length,
      artifact: { artifactId, bytes: content.length, digest: view.digest },
    })
  })
})
