import { ToolChoiceViolationError, stepCountIs, streamText } from 'ai'
import type {
  Experimental_Steering,
  FinishReason,
  LanguageModelUsage,
  ModelMessage,
  StopCondition,
  Tool,
  ToolSet,
  UserModelMessage,
} from 'ai'
import { FailureCategory } from '@baton/contracts'
import type { ContentBlock, SubagentResult, SubagentStopReason } from '@baton/subagents'
import { isAborted } from './abortable-delay.ts'
import { categorizeFailure, isAbortError } from './failure-category.ts'
import type { LanguageModelV4 } from './language-model.ts'

/**
 * A forced structured-output capture: a tool the model must call with a value that satisfies the
 * requested schema. `captured()` reports the accepted value once there is one; the loop stops then.
 */
export interface CaptureToolBinding {
  readonly toolName: string
  readonly tool: Tool
  captured(): { readonly value: unknown } | undefined
}

export interface AgentUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly totalTokens: number
}

/** What the loop observed, in order. `message` events are exactly what a session log persists. */
export type AgentLoopEvent =
  | { readonly type: 'message'; readonly message: ModelMessage; readonly steering: boolean }
  | {
      readonly type: 'step'
      readonly stepNumber: number
      readonly finishReason: string
      readonly usage: AgentUsage
    }

export interface RunAgentOptions {
  readonly model: LanguageModelV4
  /** The system prompt (deployment instructions plus any persona section). */
  readonly system?: string
  /** The new user content for this run. */
  readonly prompt: string | readonly ContentBlock[]
  /** Conversation so far (a replayed session or a fork seed); the prompt is appended after it. */
  readonly history?: readonly ModelMessage[]
  readonly tools?: ToolSet
  /** Upper bound on model calls in this run. Default 20. */
  readonly maxSteps?: number
  readonly signal?: AbortSignal
  /** Steering messages are added at the next step boundary (AI SDK steering). */
  readonly steering?: Experimental_Steering
  readonly structuredOutput?: CaptureToolBinding
  /** Retries of retryable provider errors per call. Default 2 (the SDK's). */
  readonly maxRetries?: number
  readonly maxOutputTokens?: number
  readonly onEvent?: (event: AgentLoopEvent) => void
}

/** A SubagentResult plus what the runtime needs to persist and report. */
export interface AgentOutcome extends SubagentResult {
  readonly usage: AgentUsage
  readonly steps: number
  /** Messages this run added to the conversation, starting with the prompt itself. */
  readonly messages: readonly ModelMessage[]
}

const DEFAULT_MAX_STEPS = 20

/**
 * Run one agent turn on the AI SDK's `streamText` tool loop. Streaming is used (not generateText)
 * because it reports abort and provider errors as stream parts instead of rejections, which keeps
 * every child-level failure representable as a stop reason; steering rides the SDK's step-boundary
 * steering. This function resolves for every model, transport and tool failure; it rejects only when
 * the library itself is broken.
 */
export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  const messages: ModelMessage[] = []
  const emit = (event: AgentLoopEvent): void => {
    if (event.type === 'message') messages.push(event.message)
    options.onEvent?.(event)
  }
  const userMessage: UserModelMessage = {
    role: 'user',
    content: [{ type: 'text', text: promptText(options.prompt) }],
  }
  emit({ type: 'message', message: userMessage, steering: false })

  let usage: AgentUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
  let steps = 0
  // The SDK may still call the model with an already-aborted signal; never start a call we know is dead.
  if (options.signal?.aborted === true) {
    return finish({
      stopReason: 'aborted',
      failureCategory: FailureCategory.Cancelled,
      partialText: '',
    })
  }

  const capture = options.structuredOutput
  const tools: ToolSet = {
    ...options.tools,
    ...(capture === undefined ? {} : { [capture.toolName]: capture.tool }),
  }
  const stopWhen: StopCondition<ToolSet>[] = [stepCountIs(options.maxSteps ?? DEFAULT_MAX_STEPS)]
  if (capture !== undefined) stopWhen.push(() => capture.captured() !== undefined)

  const result = streamText({
    model: options.model,
    ...(options.system === undefined ? {} : { instructions: options.system }),
    messages: [...(options.history ?? []), userMessage],
    tools,
    // A requested schema is only honoured through the capture tool, so the model may not end with
    // plain text: every step must be a tool call until the capture is accepted.
    toolChoice: capture === undefined ? 'auto' : 'required',
    stopWhen,
    ...(options.signal === undefined ? {} : { abortSignal: options.signal }),
    ...(options.steering === undefined ? {} : { experimental_steering: options.steering }),
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens }),
    onStepEnd: (step) => {
      // Steering messages went into this step's input, so they precede its response in the log.
      for (const message of step.experimental_steeringMessages ?? [])
        emit({ type: 'message', message, steering: true })
      for (const message of step.response.messages)
        emit({ type: 'message', message, steering: false })
    },
    // Failures arrive as `error` stream parts below; the default handler would only log them.
    onError: () => undefined,
  })

  let partialText = ''
  let aborted = false
  let failure: unknown
  let finishReason: FinishReason | undefined
  try {
    for await (const part of result.stream) {
      // Only these parts matter for the outcome; messages come from onStepEnd, complete per step.
      if (part.type === 'start-step') partialText = ''
      else if (part.type === 'text-delta') partialText += part.text
      else if (part.type === 'finish-step') {
        steps += 1
        const stepUsage = toAgentUsage(part.usage)
        usage = addUsage(usage, stepUsage)
        emit({
          type: 'step',
          stepNumber: steps - 1,
          finishReason: part.finishReason,
          usage: stepUsage,
        })
      } else if (part.type === 'error') failure = part.error
      else if (part.type === 'abort') aborted = true
      else if (part.type === 'finish') finishReason = part.finishReason
    }
  } catch (error) {
    if (isAbortError(error)) aborted = true
    else failure = error
  }

  if (aborted || isAborted(options.signal)) {
    return finish({
      stopReason: 'aborted',
      failureCategory: FailureCategory.Cancelled,
      partialText,
    })
  }
  const captured = capture?.captured()
  if (failure !== undefined) {
    // With a schema requested the model must call a tool every step; the SDK fails a step that
    // answers in plain text instead, which means the capture was never made.
    const missedCapture =
      capture !== undefined &&
      captured === undefined &&
      ToolChoiceViolationError.isInstance(failure)
    return finish({
      stopReason: 'error',
      failureCategory: missedCapture
        ? FailureCategory.StructuredOutputMissing
        : categorizeFailure(failure),
      partialText,
    })
  }
  if (capture !== undefined) {
    if (captured !== undefined)
      return finish({ stopReason: 'completed', partialText, structured: captured.value })
    return finish({
      stopReason: 'error',
      failureCategory: FailureCategory.StructuredOutputMissing,
      partialText,
    })
  }
  switch (finishReason) {
    case 'stop':
      return finish({ stopReason: 'completed', partialText })
    case 'length':
      return finish({
        stopReason: 'max-tokens',
        failureCategory: FailureCategory.MaxTokens,
        partialText,
      })
    case 'content-filter':
      return finish({
        stopReason: 'refusal',
        failureCategory: FailureCategory.Refusal,
        partialText,
      })
    case 'tool-calls':
      // The loop only ends on a tool-call step when the step budget ran out mid-task.
      return finish({
        stopReason: 'error',
        failureCategory: FailureCategory.MaxStepsExceeded,
        partialText,
      })
    case 'interrupted':
      return finish({
        stopReason: 'error',
        failureCategory: FailureCategory.StreamInterrupted,
        partialText,
      })
    case 'error':
    case 'other':
    case undefined:
      return finish({
        stopReason: 'error',
        failureCategory: FailureCategory.ModelError,
        partialText,
      })
  }

  function finish(end: {
    stopReason: SubagentStopReason
    failureCategory?: FailureCategory
    partialText: string
    structured?: unknown
  }): AgentOutcome {
    const output = finalOutput(messages, end.partialText, end)
    return {
      output,
      stopReason: end.stopReason,
      ...(end.failureCategory === undefined ? {} : { failureCategory: end.failureCategory }),
      ...('structured' in end ? { structured: end.structured } : {}),
      usage,
      steps,
      messages,
    }
  }
}

/**
 * The last assistant message's text. A run cut short mid-step has no recorded assistant message for
 * that step, so its streamed text is reported instead (the stop reason already says it is partial).
 * A structured run ends on the capture call, which has no text: its output is the captured JSON.
 */
function finalOutput(
  messages: readonly ModelMessage[],
  partialText: string,
  end: { readonly stopReason: SubagentStopReason; readonly structured?: unknown },
): ContentBlock[] {
  if (end.stopReason !== 'completed' && partialText !== '')
    return [{ type: 'text', text: partialText }]
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]
    if (message?.role === 'user') break
    if (message?.role !== 'assistant') continue
    const text = assistantText(message.content)
    if (text !== '') return [{ type: 'text', text }]
  }
  if ('structured' in end) return [{ type: 'text', text: JSON.stringify(end.structured) }]
  return []
}

export function assistantText(content: ModelMessage['content']): string {
  if (typeof content === 'string') return content
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('')
}

export function promptText(prompt: string | readonly ContentBlock[]): string {
  if (typeof prompt === 'string') return prompt
  return prompt.map((block) => block.text).join('\n\n')
}

function toAgentUsage(usage: LanguageModelUsage): AgentUsage {
  const inputTokens = usage.inputTokens ?? 0
  const outputTokens = usage.outputTokens ?? 0
  return { inputTokens, outputTokens, totalTokens: usage.totalTokens ?? inputTokens + outputTokens }
}

function addUsage(a: AgentUsage, b: AgentUsage): AgentUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  }
}
