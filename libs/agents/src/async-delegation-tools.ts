import { jsonSchema, tool } from 'ai'
import type { ToolSet } from 'ai'
import {
  ASYNC_DELEGATION_INPUTS,
  asyncDelegationToolDefinitions,
  type ToolDescriptor,
} from '@baton/subagents'

/** What a tool answers the model: a result, or `{ error }` it can read (nothing was written). */
export type DelegationToolAnswer = Readonly<Record<string, unknown>>

/**
 * The durable backend of the async tools (a host's ledger and queue). Inputs arrive checked
 * against `ASYNC_DELEGATION_INPUTS`; each method answers `{ error }` for a refusal.
 */
export interface AsyncDelegationBackend {
  /** One line per subagent the model may delegate to (`- name: description`). */
  readonly subagents: readonly { readonly name: string; readonly description: string }[]
  delegate(input: {
    readonly name: string
    readonly prompt: string
    readonly agentId?: string | undefined
  }): Promise<DelegationToolAnswer>
  steer(input: {
    readonly attemptId: string
    readonly message: string
  }): Promise<DelegationToolAnswer>
  cancel(input: { readonly attemptId: string }): Promise<DelegationToolAnswer>
  wait(input: {
    readonly attemptId: string
    readonly timeoutMs?: number | undefined
  }): Promise<DelegationToolAnswer>
  info(): Promise<DelegationToolAnswer>
}

/**
 * The seed's async-only topology as an executable toolset: `delegate`, `steer_subagent`,
 * `cancel_subagent`, `wait_subagent` and `subagent_info`, the definitions the subagent seam
 * describes, each call going to `backend`. The blocking `delegate` backend is not installed, and
 * neither is `spawn_delegate`. An input the schema refuses (an unknown key such as host metadata,
 * a missing field) is answered `{ error }` for the model to read; the backend is not called.
 */
export function createAsyncDelegationTools(backend: AsyncDelegationBackend): ToolSet {
  const listing = backend.subagents.map((s) => `- ${s.name}: ${s.description}`).join('\n')
  const definitions = asyncDelegationToolDefinitions(
    `Delegate a self-contained task to one of these subagents:\n${listing}`,
  )
  const run: Record<string, (input: never) => Promise<DelegationToolAnswer>> = {
    delegate: (i: { name: string; prompt: string; agent_id?: string }) =>
      backend.delegate({ name: i.name, prompt: i.prompt, agentId: i.agent_id }),
    steer_subagent: (i: { attempt_id: string; message: string }) =>
      backend.steer({ attemptId: i.attempt_id, message: i.message }),
    cancel_subagent: (i: { attempt_id: string }) => backend.cancel({ attemptId: i.attempt_id }),
    wait_subagent: (i: { attempt_id: string; timeout_ms?: number }) =>
      backend.wait({ attemptId: i.attempt_id, timeoutMs: i.timeout_ms }),
    subagent_info: () => backend.info(),
  }
  return Object.fromEntries(
    definitions.map((definition: ToolDescriptor) => {
      const name = definition.name as keyof typeof ASYNC_DELEGATION_INPUTS
      const call = run[name]
      if (call === undefined) throw new Error(`no backend call for tool ${name}`)
      return [
        name,
        tool({
          description: definition.description ?? name,
          // Checked here rather than by the loop, so that a refusal is an answer the model reads.
          inputSchema: jsonSchema<unknown>(definition.inputSchema ?? { type: 'object' }),
          execute: async (input: unknown) => {
            const parsed = ASYNC_DELEGATION_INPUTS[name].safeParse(input ?? {})
            if (!parsed.success)
              return {
                error: `invalid ${name} input: ${parsed.error.issues
                  .map((i) =>
                    i.code === 'unrecognized_keys'
                      ? `unknown key(s) ${i.keys.join(', ')}`
                      : `${i.path.join('.') || 'input'}: ${i.message}`,
                  )
                  .join('; ')}`,
              }
            return call(parsed.data as never)
          },
        }),
      ]
    }),
  )
}
