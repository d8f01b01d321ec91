import { request } from 'undici'

/** One HTTP call as the client makes it: a method, headers, a JSON text body or none, a signal. */
export interface Outgoing {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  readonly signal?: AbortSignal
}

/**
 * An answer whose body has not been read yet: the caller reads it with `text()` or `bytes()`
 * inside its call's timeout, so a timeout covers the whole body.
 */
export interface Answer {
  readonly status: number
  header(name: string): string | undefined
  text(): Promise<string>
  bytes(): Promise<Uint8Array>
}

export type Transport = (url: string, outgoing: Outgoing) => Promise<Answer>

/**
 * The default transport: undici's `request` (the HTTP client Node's own `fetch` is built on,
 * without the Fetch API's objects around each call), on undici's global keep-alive pool. A
 * network failure rejects with `TypeError('fetch failed', { cause })`, as `fetch` does, and an
 * aborted call with its signal's reason.
 */
export const sendRequest: Transport = async (url, outgoing) => {
  let answer: Awaited<ReturnType<typeof request>>
  try {
    answer = await request(url, {
      method: outgoing.method,
      headers: outgoing.headers,
      body: outgoing.body ?? null,
      signal: outgoing.signal ?? null,
    })
  } catch (error) {
    throw outgoing.signal?.aborted === true ? abortReason(outgoing.signal) : fetchFailed(error)
  }
  const { statusCode, headers, body } = answer
  const read = async <T>(reader: () => Promise<T>): Promise<T> => {
    try {
      return await reader()
    } catch (error) {
      throw outgoing.signal?.aborted === true ? abortReason(outgoing.signal) : fetchFailed(error)
    }
  }
  return {
    status: statusCode,
    header: (name) => {
      const value = headers[name.toLowerCase()]
      return Array.isArray(value) ? value.join(', ') : value
    },
    text: () => read(() => body.text()),
    bytes: () => read(async () => new Uint8Array(await body.arrayBuffer())),
  }
}

/** A transport with `fetch`'s contract (the client's `fetch` option). */
export function sendWithFetch(doFetch: typeof fetch): Transport {
  return async (url, outgoing) => {
    const response = await doFetch(url, {
      method: outgoing.method,
      headers: outgoing.headers,
      ...(outgoing.body === undefined ? {} : { body: outgoing.body }),
      ...(outgoing.signal === undefined ? {} : { signal: outgoing.signal }),
    })
    return {
      status: response.status,
      header: (name) => response.headers.get(name) ?? undefined,
      text: () => response.text(),
      bytes: async () => new Uint8Array(await response.arrayBuffer()),
    }
  }
}

function fetchFailed(cause: unknown): TypeError {
  return new TypeError('fetch failed', { cause })
}

/** The signal's reason, as `fetch` rejects with it (an `AbortError` when it is no error). */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  return reason instanceof Error
    ? reason
    : new DOMException('This operation was aborted', 'AbortError')
}
