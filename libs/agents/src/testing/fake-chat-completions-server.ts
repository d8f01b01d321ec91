import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A FAKE OpenAI chat-completions endpoint for tests: node:http on 127.0.0.1, port 0, speaking the
 * streaming (SSE) protocol that `@ai-sdk/openai-compatible` consumes. It replays scripted replies,
 * records every request body, and reports when a client drops a connection (an aborted stream).
 */
export type FakeReply =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'tool-call'; readonly name: string; readonly arguments: unknown }
  /** Send `text`, then hold the stream open until the client goes away. */
  | { readonly kind: 'hang'; readonly text: string }

export interface ChatRequestBody {
  readonly model: string
  readonly stream?: boolean
  readonly messages: readonly {
    readonly role: string
    readonly content?: unknown
    readonly tool_call_id?: string
  }[]
  readonly tools?: readonly { readonly function: { readonly name: string } }[]
}

export interface FakeChatCompletionsServer {
  readonly baseUrl: string
  readonly requests: readonly ChatRequestBody[]
  /** Resolves when a hanging reply's client closed the connection before the stream finished. */
  readonly clientDisconnected: Promise<void>
  /** Resolves once a hanging reply has written its first chunk. */
  readonly hangStarted: Promise<void>
  close(): Promise<void>
}

export async function startFakeChatCompletionsServer(
  replies: readonly FakeReply[],
): Promise<FakeChatCompletionsServer> {
  const requests: ChatRequestBody[] = []
  let onDisconnect!: () => void
  const clientDisconnected = new Promise<void>((resolve) => (onDisconnect = resolve))
  let onHang!: () => void
  const hangStarted = new Promise<void>((resolve) => (onHang = resolve))

  const server = createServer((request, response) => {
    void handle(request, response)
  })

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
      response.writeHead(404).end()
      return
    }
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequestBody
    requests.push(body)
    const reply = replies[requests.length - 1]
    if (reply === undefined) {
      response
        .writeHead(500, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'fake: no reply left' } }))
      return
    }
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    const id = `chatcmpl-${requests.length}`
    const send = (payload: unknown): void => {
      response.write(`data: ${JSON.stringify(payload)}\n\n`)
    }
    const chunk = (delta: unknown, finishReason: string | null) => ({
      id,
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: body.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    })
    const usage = { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 }

    switch (reply.kind) {
      case 'text':
        send(chunk({ role: 'assistant', content: reply.text }, null))
        send(chunk({}, 'stop'))
        send({
          id,
          object: 'chat.completion.chunk',
          created: 1_700_000_000,
          model: body.model,
          choices: [],
          usage,
        })
        response.end('data: [DONE]\n\n')
        return
      case 'tool-call':
        send(
          chunk(
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  index: 0,
                  id: `call_${requests.length}`,
                  type: 'function',
                  function: { name: reply.name, arguments: JSON.stringify(reply.arguments) },
                },
              ],
            },
            null,
          ),
        )
        send(chunk({}, 'tool_calls'))
        send({
          id,
          object: 'chat.completion.chunk',
          created: 1_700_000_000,
          model: body.model,
          choices: [],
          usage,
        })
        response.end('data: [DONE]\n\n')
        return
      case 'hang':
        response.on('close', () => {
          if (!response.writableEnded) onDisconnect()
        })
        send(chunk({ role: 'assistant', content: reply.text }, null))
        onHang()
        return
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    clientDisconnected,
    hangStarted,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error === undefined ? resolve() : reject(error)))
      }),
  }
}
