import { SubagentError } from './errors.ts'

/** `{{name}}` with optional inner whitespace; names are identifiers, optionally dotted or dashed. */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g

/**
 * Interpolate a persona template against registered variables. Strict: a placeholder naming an
 * unregistered variable throws instead of rendering empty, because a persona with a silently blank
 * hole changes the child's behaviour in ways nobody reviews. Lookup uses own properties only, so
 * `{{constructor}}` does not resolve to Object.prototype.
 */
export function interpolatePersona(
  template: string,
  variables: Readonly<Record<string, string>>,
): string {
  const unknown = new Set<string>()
  const rendered = template.replace(PLACEHOLDER, (_match, name: string) => {
    if (!Object.hasOwn(variables, name)) {
      unknown.add(name)
      return ''
    }
    return variables[name] ?? ''
  })
  if (unknown.size > 0) {
    const names = [...unknown]
    throw new SubagentError(
      'UNKNOWN_PERSONA_VARIABLE',
      `Persona references unknown variable(s): ${names.join(', ')}. Register them or remove the placeholders.`,
      { details: { unknown: names } },
    )
  }
  return rendered
}
