import type { SessionEvent } from '@baton/contracts'

/**
 * Reads a Server-Sent Events stream of session events as they arrive: one event per frame
 * (`id`, `event`, `data` JSON). A refusal (a 4xx) is thrown as the API's error.
 */
export async function* readEventStream(
  url: string,
  apiKey: string | undefined,
  fetchImpl: typeof fetch,
  signal: AbortSignal | undefined,
  /** The error a refusal is thrown as (its status and body). */
  refusal: (status: number, text: string) => Error,
): AsyncGenerator<SessionEvent> {
  const response = await fetchImpl(url, {
    headers: {
      accept: 'text/event-stream',
      ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }),
    },
    ...(signal === undefined ? {} : { signal }),
  })
  if (response.status !== 200 || response.body === null)
    throw refusal(response.status, await response.text())
  const decoder = new TextDecoder()
  let buffered = ''
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true })
    let end = buffered.indexOf('\n\n')
    while (end !== -1) {
      const frame = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      const data = frame
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice('data: '.length)
      if (data !== undefined) yield JSON.parse(data) as SessionEvent
      end = buffered.indexOf('\n\n')
    }
  }
}
