import { convertArrayToReadableStream } from 'ai/test'
import type {
  LanguageModelV4CallOptions,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
} from '../language-model.ts'

/** Test helpers: stream results for `MockLanguageModelV4` from `ai/test`. */

export const testUsage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
}

export function textStream(
  text: string,
  unified: 'stop' | 'length' | 'content-filter' = 'stop',
): LanguageModelV4StreamResult {
  return {
    stream: convertArrayToReadableStream<LanguageModelV4StreamPart>([
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: text },
      { type: 'text-end', id: 't' },
      { type: 'finish', finishReason: { unified, raw: unified }, usage: testUsage },
    ]),
  }
}

export function toolCallStream(
  toolName: string,
  input: unknown,
  toolCallId = `call-${toolName}`,
): LanguageModelV4StreamResult {
  return {
    stream: convertArrayToReadableStream<LanguageModelV4StreamPart>([
      { type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) },
      {
        type: 'finish',
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: testUsage,
      },
    ]),
  }
}

/** A stream that emits some text and then stays open until the call is aborted. */
export function hangingStream(
  options: LanguageModelV4CallOptions,
  text = 'working',
): LanguageModelV4StreamResult {
  return {
    stream: new ReadableStream<LanguageModelV4StreamPart>({
      start(controller) {
        controller.enqueue({ type: 'text-start', id: 'h' })
        controller.enqueue({ type: 'text-delta', id: 'h', delta: text })
        const signal = options.abortSignal
        const fail = (): void =>
          controller.error(signal?.reason ?? new DOMException('aborted', 'AbortError'))
        if (signal?.aborted === true) fail()
        else signal?.addEventListener('abort', fail, { once: true })
      },
    }),
  }
}

/** Every text the model was shown in one call, flattened, to assert what a prompt contained. */
export function promptTexts(options: LanguageModelV4CallOptions): string[] {
  const texts: string[] = []
  for (const message of options.prompt) {
    if (typeof message.content === 'string') texts.push(message.content)
    else for (const part of message.content) if (part.type === 'text') texts.push(part.text)
  }
  return texts
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}
