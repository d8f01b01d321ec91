// A minimal JSON-over-HTTP client for the scripts (node:http, keep-alive agent, a timeout).
import http from 'node:http'

export interface HttpAnswer {
  readonly status: number
  readonly body: string
}

/** Resolves with any HTTP answer; rejects on a connection error or when `timeoutMs` passes. */
export function httpJson(
  agent: http.Agent,
  port: number,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  timeoutMs = 15_000,
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<HttpAnswer> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        agent,
        timeout: timeoutMs,
        headers:
          payload === undefined
            ? { ...extraHeaders }
            : {
                ...extraHeaders,
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(payload),
              },
      },
      (res) => {
        let data = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (data += c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }))
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end(payload)
  })
}

export function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}
