import { jsonSchema, tool } from 'ai'
import type { JSONSchema7 } from 'ai'
import { createStructuredCapture } from '@baton/subagents'
import type { StructuredOutputSchema } from '@baton/subagents'
import type { CaptureToolBinding } from './run-agent.ts'

/**
 * Bind the seam's structured capture (schema check, validation, the `submit_result` descriptor) to
 * an AI SDK tool. A rejected submission goes back to the model with the validation errors so it can
 * try again; only an accepted one counts, so `structured` never carries an invalid value.
 */
export function createCaptureToolBinding(schema: StructuredOutputSchema): CaptureToolBinding {
  const capture = createStructuredCapture(schema)
  let captured: { readonly value: unknown } | undefined
  return {
    toolName: capture.tool.name,
    tool: tool({
      ...(capture.tool.description === undefined ? {} : { description: capture.tool.description }),
      inputSchema: jsonSchema<unknown>(schema as JSONSchema7),
      execute: (input: unknown) => {
        const attempt = capture.record(input)
        if (!attempt.accepted) return { accepted: false, errors: [...attempt.errors] }
        captured = { value: structuredClone(input) }
        return { accepted: true }
      },
    }),
    captured: () => captured,
  }
}
