import { connect } from 'node:net'
import { sql } from 'kysely'
import { SCRIPT_OUTPUT_BYTES_MAX } from '@baton/contracts'
import { describe, expect } from '@baton/testing'
import { apiTest, delegate, rowCounts, type ApiHarness } from './support/api-harness.ts'

const NUL = 'bad\u0000text'
const LONE_SURROGATE = 'bad\ud800text'

/** A queued attempt to steer and cancel: `hang` keeps it non-terminal, and no worker runs here. */
async function queuedAttempt(h: ApiHarness): Promise<string> {
  const accepted = await h.post(delegate('s-target'), { name: 'scripted', prompt: '{"hang":true}' })
  expect(accepted.status).toBe(202)
  return accepted.body.attemptId as string
}

interface FieldCase {
  readonly field: string
  readonly route: 'delegate' | 'steer' | 'cancel'
  readonly body: (bad: string) => unknown
  readonly path: string
}

const fields: readonly FieldCase[] = [
  {
    field: 'prompt (string)',
    route: 'delegate',
    body: (bad) => ({ name: 'scripted', prompt: bad }),
    path: 'body/prompt',
  },
  {
    field: 'prompt block',
    route: 'delegate',
    body: (bad) => ({ name: 'scripted', prompt: [{ type: 'text', text: bad }] }),
    path: 'body/prompt',
  },
  {
    field: 'metadata.traceId',
    route: 'delegate',
    body: (bad) => ({ name: 'scripted', prompt: 'x', metadata: { traceId: bad } }),
    path: 'body/metadata/traceId',
  },
  {
    field: 'label key',
    route: 'delegate',
    body: (bad) => ({ name: 'scripted', prompt: 'x', metadata: { labels: { [bad]: 'v' } } }),
    path: 'body/metadata/labels',
  },
  {
    field: 'label value',
    route: 'delegate',
    body: (bad) => ({ name: 'scripted', prompt: 'x', metadata: { labels: { team: bad } } }),
    path: 'body/metadata/labels/team',
  },
  {
    field: 'steering content (string)',
    route: 'steer',
    body: (bad) => ({ content: bad }),
    path: 'body/content',
  },
  {
    field: 'steering content block',
    route: 'steer',
    body: (bad) => ({ content: [{ type: 'text', text: bad }] }),
    path: 'body/content',
  },
  {
    field: 'cancel reason',
    route: 'cancel',
    body: (bad) => ({ reason: bad }),
    path: 'body/reason',
  },
]

const fieldCases = fields.flatMap((f) => [
  { ...f, what: 'U+0000', bad: NUL },
  { ...f, what: 'a lone surrogate', bad: LONE_SURROGATE },
])

describe('text the ledger cannot store is refused with a typed 400 naming the field', () => {
  apiTest.for(fieldCases)(
    '$field with $what → 400 at $path, nothing written',
    async ({ route, body, bad, path }, { api: h, db }) => {
      const attemptId = await queuedAttempt(h)
      const target =
        route === 'delegate' ? delegate('s-field') : `/v1/attempts/${attemptId}/${route}`
      const before = await rowCounts(db)
      const answer = await h.post(target, body(bad))
      expect(answer.status).toBe(400)
      expect(answer.body.error.code).toBe('VALIDATION_FAILED')
      const paths = (answer.body.error.details.issues as { path: string }[]).map((i) => i.path)
      expect(
        paths.some((p) => p.startsWith(path)),
        JSON.stringify(paths),
      ).toBe(true)
      expect(await rowCounts(db)).toEqual(before)
    },
  )

  apiTest(
    'a session id with U+0000 or a broken percent-encoding → 400 in Baton shape',
    async ({ api: h, db }) => {
      const before = await rowCounts(db)
      for (const session of ['a%00b', 'a%ED%A0%80b', 'a%E0b']) {
        const answer = await h.post(delegate(session), { name: 'scripted', prompt: 'x' })
        expect(answer.status, session).toBe(400)
        expect(answer.body.error.code, session).toBe('VALIDATION_FAILED')
      }
      expect(await rowCounts(db)).toEqual(before)
    },
  )
})

describe('one bad request never fails its neighbours', () => {
  apiTest(
    'the poison test: 300 valid and 5 poisoned fired together, keyed and not',
    async ({ api: h, db }) => {
      const poisons: unknown[] = [
        { name: 'scripted', prompt: NUL },
        { name: 'scripted', prompt: 'x', metadata: { labels: { team: LONE_SURROGATE } } },
        { name: 'scripted', prompt: [{ type: 'text', text: LONE_SURROGATE }] },
        { name: 'scripted', prompt: 'x', metadata: { traceId: NUL } },
        { name: 'scripted', prompt: 'x', metadata: { labels: { [NUL]: 'v' } } },
      ]
      const before = await rowCounts(db)
      const keyed = (i: number): Record<string, string> =>
        i % 2 === 0 ? { 'idempotency-key': `k-${i}` } : {}
      const valid = Array.from({ length: 300 }, (_, i) =>
        h.post(delegate(`s-poison-${i % 7}`), { name: 'scripted', prompt: `task ${i}` }, keyed(i)),
      )
      // Interleaved, so the poisoned requests arrive inside the same batches as valid ones.
      const poisoned = poisons.map((p, i) => h.post(delegate(`s-poison-${i % 7}`), p, keyed(i)))
      const [validAnswers, poisonedAnswers] = await Promise.all([
        Promise.all(valid),
        Promise.all(poisoned),
      ])
      expect(validAnswers.map((a) => a.status)).toEqual(validAnswers.map(() => 202))
      for (const answer of poisonedAnswers) {
        expect(answer.status).toBe(400)
        expect(answer.body.error.code).toBe('VALIDATION_FAILED')
      }
      const after = await rowCounts(db)
      expect(after.attempts - before.attempts).toBe(300)
      expect(after.agents - before.agents).toBe(300)
    },
  )
})

describe('documented values are accepted, framework errors come out in Baton shape', () => {
  apiTest(
    'session ids up to 128 characters are accepted; 129 → 400; an overlong path → 414',
    async ({ api: h }) => {
      const ok = await h.post(delegate('s'.repeat(128)), { name: 'scripted', prompt: 'x' })
      expect(ok.status).toBe(202)
      const long = await h.post(delegate('s'.repeat(129)), { name: 'scripted', prompt: 'x' })
      expect(long.status).toBe(400)
      expect(long.body.error).toMatchObject({ code: 'VALIDATION_FAILED' })
      expect(long.body.error.details.issues[0].path).toBe('params/sessionId')
      const huge = await h.post(delegate('s'.repeat(2000)), { name: 'scripted', prompt: 'x' })
      expect(huge.status).toBe(414)
      expect(huge.body).toEqual({
        error: { code: 'URI_TOO_LONG', message: 'a path parameter is too long' },
      })
    },
  )

  apiTest(
    'text/plain → 415, bad JSON → 400, unknown route and wrong method → 404, huge headers → 431',
    async ({ api: h, db }) => {
      const before = await rowCounts(db)
      const plain = await fetch(`${h.base}${delegate('s-shape')}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...h.auth },
        body: '{"name":"scripted","prompt":"x"}',
      })
      expect(plain.status).toBe(415)
      expect(await plain.json()).toMatchObject({ error: { code: 'UNSUPPORTED_MEDIA_TYPE' } })

      const badJson = await h.post(delegate('s-shape'), '{"name":"scripted",')
      expect(badJson).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })

      expect(await h.get('/v2/nothing')).toMatchObject({
        status: 404,
        body: { error: { code: 'NOT_FOUND' } },
      })
      // A known path with a method it does not have is answered like an unknown route.
      const wrongMethod = await fetch(`${h.base}${delegate('s-shape')}`, {
        method: 'PUT',
        headers: h.auth,
      })
      expect(wrongMethod.status).toBe(404)
      expect(await wrongMethod.json()).toMatchObject({ error: { code: 'NOT_FOUND' } })
      expect(await h.get(delegate('s-shape'))).toMatchObject({
        status: 404,
        body: { error: { code: 'NOT_FOUND' } },
      })

      const overflow = await rawRequest(
        h.base,
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`,
      )
      expect(overflow.status).toBe(431)
      expect(JSON.parse(overflow.body)).toEqual({
        error: { code: 'HEADERS_TOO_LARGE', message: 'request headers are too large' },
      })
      const garbage = await rawRequest(h.base, 'NOT HTTP AT ALL\r\n\r\n')
      expect(garbage.status).toBe(400)
      expect(JSON.parse(garbage.body)).toMatchObject({ error: { code: 'VALIDATION_FAILED' } })
      expect(await rowCounts(db)).toEqual(before)
    },
  )
})

/** Sends raw bytes (what fetch refuses to send) and reads the answer until the server closes. */
async function rawRequest(
  base: string,
  request: string,
): Promise<{ status: number; body: string }> {
  const url = new URL(base)
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname)
    let received = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (received += chunk))
    socket.on('error', (error) => (received === '' ? reject(error) : resolve(received)))
    socket.on('close', () => resolve(received))
    socket.end(request)
  })
  const [head = '', body = ''] = text.split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), body }
}

describe('values are stored as sent', () => {
  apiTest(
    'prompts keep their whitespace, for storage and for idempotency; blank ones are refused',
    async ({ api: h, db }) => {
      const padded = await h.post(delegate('s-ws'), { name: 'scripted', prompt: '  padded \n' })
      expect(padded.status).toBe(202)
      const stored = await sql<{ prompt: unknown }>`
      select prompt from attempts where id = ${padded.body.attemptId}
    `.execute(db)
      expect(stored.rows[0]?.prompt).toEqual([{ type: 'text', text: '  padded \n' }])

      const first = await h.post(
        delegate('s-ws'),
        { name: 'scripted', prompt: ' x' },
        { 'idempotency-key': 'k-ws' },
      )
      expect(first.status).toBe(202)
      const other = await h.post(
        delegate('s-ws'),
        { name: 'scripted', prompt: 'x' },
        { 'idempotency-key': 'k-ws' },
      )
      expect(other).toMatchObject({
        status: 409,
        body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } },
      })

      const blank = await h.post(delegate('s-ws'), { name: 'scripted', prompt: ' \n\t ' })
      expect(blank).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } })
    },
  )

  apiTest('?timeoutMs= takes plain decimal integers only', async ({ api: h }) => {
    const attemptId = await queuedAttempt(h)
    const wait = (query: string): Promise<{ status: number; body: any }> =>
      h.get(`/v1/attempts/${attemptId}/wait?${query}`)
    for (const value of ['', '0x10', '%205', '1e3', '-1', '1.5', '60001', '5%20']) {
      const answer = await wait(`timeoutMs=${value}`)
      expect(answer.status, value).toBe(400)
      expect(answer.body.error.code, value).toBe('VALIDATION_FAILED')
      expect(answer.body.error.details.issues[0].path, value).toMatch(/^querystring/)
    }
    expect(await wait('timeoutMs=1&timeoutMs=2')).toMatchObject({ status: 400 })
    // The OpenAPI document still describes the query (a transform inside a schema can break it).
    const docs = await h.get('/docs/json')
    expect(docs.status).toBe(200)
    expect(JSON.stringify(docs.body.paths['/v1/attempts/{attemptId}/wait'])).toContain('timeoutMs')
    for (const query of ['timeoutMs=5', 'timeoutMs=0', '']) {
      const answer = await wait(query)
      expect(answer.status, query).toBe(200)
      expect(answer.body.status, query).toBe('accepted')
    }
  })
})

describe('the scripted child refuses a script it does not understand at accept time', () => {
  apiTest(
    'invalid scripts → 400 naming the script field, nothing written; scripts and plain text are accepted',
    async ({ api: h, db }) => {
      const before = await rowCounts(db)
      const invalid: [unknown, string][] = [
        ['{"fail":true}', 'body/prompt/script/fail'],
        ['{"hang":false}', 'body/prompt/script/hang'],
        [` {"outputBytes":${SCRIPT_OUTPUT_BYTES_MAX + 1}} `, 'body/prompt/script/outputBytes'],
        ['{"delayMs":-1}', 'body/prompt/script/delayMs'],
        ['{"outptu":"typo"}', 'body/prompt/script'],
        [
          [
            { type: 'text', text: '{"fail":' },
            { type: 'text', text: '1}' },
          ],
          'body/prompt/script/fail',
        ],
      ]
      for (const [prompt, path] of invalid) {
        const answer = await h.post(delegate('s-script'), { name: 'scripted', prompt })
        expect(answer.status, JSON.stringify(prompt)).toBe(400)
        expect(answer.body.error.code).toBe('VALIDATION_FAILED')
        expect(answer.body.error.details.issues[0].path, JSON.stringify(prompt)).toBe(path)
      }
      expect(await rowCounts(db)).toEqual(before)
      for (const prompt of [
        `{"outputBytes":${SCRIPT_OUTPUT_BYTES_MAX}}`,
        '{"fail":"why"}',
        'plain text is echoed',
        '{not json',
        '[1,2]',
      ]) {
        const answer = await h.post(delegate('s-script'), { name: 'scripted', prompt })
        expect(answer.status, prompt).toBe(202)
      }
    },
  )
})
