import { abortReason, abortableDelay, isAborted, untilAborted } from './abortable-delay.ts'
import { AgentsError, AgentsErrorCode } from './agents-error.ts'
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from './language-model.ts'

/** A tool call a scripted step asks for; `input` is sent JSON-encoded, as a real provider would. */
export interface ScriptedToolCall {
  readonly toolName: string
  readonly input: unknown
}

interface ScriptStepBase {
  /** Wait this long (abortably) before the step produces anything. */
  readonly delayMs?: number
}

/**
 * One model call's worth of behaviour. Every call to the model consumes the next step, so a script
 * reads as the conversation the model will have: ask for a tool, then answer, then …
 */
export type ScriptStep =
  | (ScriptStepBase & { readonly kind: 'text'; readonly text: string })
  | (ScriptStepBase & {
      readonly kind: 'tool-calls'
      readonly calls: readonly ScriptedToolCall[]
      readonly text?: string
    })
  /** The model declines: finish reason `content-filter`, which the loop maps to `refusal`. */
  | (ScriptStepBase & { readonly kind: 'refusal'; readonly text?: string })
  /** The model runs out of output budget: finish reason `length` → `max-tokens`. */
  | (ScriptStepBase & { readonly kind: 'max-tokens'; readonly text?: string })
  /** A model/transport failure, optionally after some streamed text. */
  | (ScriptStepBase & {
      readonly kind: 'fail'
      readonly message?: string
      readonly afterText?: string
    })
  /** Emit optional text, then never finish until the call's abort signal fires. */
  | (ScriptStepBase & { readonly kind: 'hang'; readonly text?: string })
  /**
   * Answer with the text of every user message in the call's prompt, in order, one per line: shows
   * which conversation (history, prompt, steering) the model was actually given.
   */
  | (ScriptStepBase & { readonly kind: 'recall' })
  /**
   * Answer with the request the model was given, as JSON: the names of the tools offered
   * (sorted), and every tool result in the prompt (`{ toolName, output }`, in order).
   */
  | (ScriptStepBase & { readonly kind: 'request' })

export interface Script {
  readonly steps: readonly ScriptStep[]
  /**
   * The steps of a model whose first call continues a conversation (its prompt already holds an
   * assistant turn): a resumed agent, e.g. a hosted parent's later runs. Absent: `steps`.
   */
  readonly resumeSteps?: readonly ScriptStep[]
}

/** A LanguageModel (spec v4) that replays a script; `calls` records every call for assertions. */
export interface ScriptedModel extends LanguageModelV4 {
  readonly calls: readonly LanguageModelV4CallOptions[]
}

export interface CreateScriptedModelOptions {
  readonly modelId?: string
}

const PROVIDER_ID = 'scripted'

/**
 * Build a deterministic model from a script. Each model instance has its own cursor, so two agents
 * resolving the same script both start at step one. No randomness, no clock beyond `delayMs`:
 * ids and token counts derive from the call index and the text lengths.
 */
export function createScriptedModel(
  script: Script,
  options: CreateScriptedModelOptions = {},
): ScriptedModel {
  const calls: LanguageModelV4CallOptions[] = []
  let steps = script.steps

  function nextStep(callOptions: LanguageModelV4CallOptions): {
    step: ScriptStep
    callIndex: number
  } {
    const callIndex = calls.length
    calls.push(callOptions)
    if (callIndex === 0 && script.resumeSteps !== undefined) {
      const resumed = callOptions.prompt.some((message) => message.role === 'assistant')
      if (resumed) steps = script.resumeSteps
    }
    const step = steps[callIndex]
    if (step === undefined) {
      throw new AgentsError(
        AgentsErrorCode.SCRIPT_EXHAUSTED,
        `Scripted model "${options.modelId ?? 'anonymous'}" was called ${callIndex + 1} times but its script has ${steps.length} steps.`,
      )
    }
    return { step, callIndex }
  }

  async function doGenerate(
    callOptions: LanguageModelV4CallOptions,
  ): Promise<LanguageModelV4GenerateResult> {
    const signal = callOptions.abortSignal
    const { step, callIndex } = nextStep(callOptions)
    if (step.delayMs !== undefined) await abortableDelay(step.delayMs, signal)
    if (signal?.aborted === true) throw abortReason(signal)
    const text = textOf(step, callOptions)
    const content: LanguageModelV4Content[] = []
    switch (step.kind) {
      case 'fail':
        throw scriptedFailure(step.message)
      case 'hang':
        return untilAborted(signal)
      case 'tool-calls':
        if (text !== undefined) content.push({ type: 'text', text })
        step.calls.forEach((call, index) => content.push(toolCallContent(call, callIndex, index)))
        break
      case 'text':
      case 'recall':
      case 'request':
      case 'refusal':
      case 'max-tokens':
        if (text !== undefined) content.push({ type: 'text', text })
        break
    }
    return {
      content,
      finishReason: finishReasonOf(step),
      usage: usageOf(callOptions, text),
      warnings: [],
    }
  }

  function doStream(
    callOptions: LanguageModelV4CallOptions,
  ): Promise<{ stream: ReadableStream<LanguageModelV4StreamPart> }> {
    const signal = callOptions.abortSignal
    const { step, callIndex } = nextStep(callOptions)
    // Failing before any output mirrors a provider rejecting the request outright.
    if (step.kind === 'fail' && step.afterText === undefined && step.delayMs === undefined) {
      return Promise.reject(scriptedFailure(step.message))
    }
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      async start(controller) {
        try {
          if (signal?.aborted === true) throw abortReason(signal)
          controller.enqueue({ type: 'stream-start', warnings: [] })
          if (step.delayMs !== undefined) await abortableDelay(step.delayMs, signal)
          const text = textOf(step, callOptions)
          if (text !== undefined && text !== '') {
            const id = `text-${callIndex}`
            controller.enqueue({ type: 'text-start', id })
            controller.enqueue({ type: 'text-delta', id, delta: text })
            controller.enqueue({ type: 'text-end', id })
          }
          if (step.kind === 'fail') throw scriptedFailure(step.message)
          if (step.kind === 'hang') await untilAborted(signal)
          if (step.kind === 'tool-calls') {
            step.calls.forEach((call, index) =>
              controller.enqueue(toolCallContent(call, callIndex, index)),
            )
          }
          if (isAborted(signal)) throw abortReason(signal)
          controller.enqueue({
            type: 'finish',
            finishReason: finishReasonOf(step),
            usage: usageOf(callOptions, text),
          })
          controller.close()
        } catch (error) {
          controller.error(error)
        }
      },
    })
    return Promise.resolve({ stream })
  }

  return {
    specificationVersion: 'v4',
    provider: PROVIDER_ID,
    modelId: options.modelId ?? 'anonymous',
    supportedUrls: {},
    calls,
    doGenerate,
    doStream,
  }
}

function scriptedFailure(message: string | undefined): AgentsError {
  return new AgentsError(AgentsErrorCode.SCRIPTED_FAILURE, message ?? 'Scripted model failure.')
}

function toolCallContent(call: ScriptedToolCall, callIndex: number, index: number) {
  return {
    type: 'tool-call' as const,
    toolCallId: `call-${callIndex}-${index}`,
    toolName: call.toolName,
    input: JSON.stringify(call.input ?? {}),
  }
}

function textOf(step: ScriptStep, callOptions: LanguageModelV4CallOptions): string | undefined {
  switch (step.kind) {
    case 'text':
      return step.text
    case 'recall':
      return recalledText(callOptions)
    case 'request':
      return requestText(callOptions)
    case 'fail':
      return step.afterText
    case 'tool-calls':
    case 'refusal':
    case 'max-tokens':
    case 'hang':
      return step.text
  }
}

function finishReasonOf(step: ScriptStep): LanguageModelV4FinishReason {
  switch (step.kind) {
    case 'tool-calls':
      return { unified: 'tool-calls', raw: 'tool_calls' }
    case 'refusal':
      return { unified: 'content-filter', raw: 'refusal' }
    case 'max-tokens':
      return { unified: 'length', raw: 'max_tokens' }
    case 'text':
    case 'recall':
    case 'request':
    case 'fail':
    case 'hang':
      return { unified: 'stop', raw: 'stop' }
  }
}

/** The request a `request` step answers with (see `ScriptStep`). */
function requestText(callOptions: LanguageModelV4CallOptions): string {
  const tools = (callOptions.tools ?? []).map((t) => t.name).sort()
  const toolResults: { toolName: string; output: unknown }[] = []
  for (const message of callOptions.prompt) {
    if (message.role !== 'tool') continue
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue
      const output = part.output as { readonly type: string; readonly value?: unknown }
      toolResults.push({ toolName: part.toolName, output: output.value ?? output })
    }
  }
  return JSON.stringify({ tools, toolResults })
}

/** Each user message's text parts, joined, one message per line; messages without text are skipped. */
function recalledText(callOptions: LanguageModelV4CallOptions): string {
  const lines: string[] = []
  for (const message of callOptions.prompt) {
    if (message.role !== 'user') continue
    const texts = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : []))
    if (texts.length > 0) lines.push(texts.join(''))
  }
  return lines.join('\n')
}

/** Roughly four characters a token: deterministic, and close enough for demos to look plausible. */
function usageOf(
  callOptions: LanguageModelV4CallOptions,
  outputText: string | undefined,
): LanguageModelV4Usage {
  const inputTokens = Math.ceil(JSON.stringify(callOptions.prompt).length / 4)
  const outputTokens = Math.ceil((outputText ?? '').length / 4)
  return {
    inputTokens: {
      total: inputTokens,
      noCache: inputTokens,
      cacheRead: undefined,
      cacheWrite: undefined,
    },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
  }
}
