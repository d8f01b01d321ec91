/**
 * The minimal view of a tool the seam's policies need: a name, model-facing wording, the JSON
 * Schema of its input, and free-form metadata (where `auto_inherit: true` lives). Runtimes keep
 * richer tool objects and pass these descriptors — or objects that satisfy this shape — in.
 */
export interface ToolDescriptor {
  readonly name: string
  readonly description?: string
  readonly inputSchema?: Readonly<Record<string, unknown>>
  readonly metadata?: Readonly<Record<string, unknown>>
}
