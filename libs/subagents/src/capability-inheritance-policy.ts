/**
 * Whether a delegated child receives the parent's SDK hooks and capability bundles. Inheritance is
 * explicit and off by default: a child gets none of the parent's hooks or bundles unless the policy
 * turns them on, because a hook written for the parent (an approval gate, an audit sink) can be
 * wrong or dangerous when silently replayed inside a child.
 */

/** A parent hook, identified by the capability it implements. */
export interface InheritableHook {
  readonly capabilityId: string
}

/** A parent capability bundle: its capability id and its human-facing name. */
export interface InheritableCapabilityBundle {
  readonly capabilityId: string
  readonly name: string
}

export interface SubagentCapabilityInheritancePolicyOptions {
  readonly hooks?: boolean
  readonly capabilityBundles?: boolean
  /** Matched against hook capability ids, bundle capability ids and bundle names. */
  readonly deniedCapabilities?: readonly string[]
}

export interface InheritedCapabilities<
  H extends InheritableHook,
  B extends InheritableCapabilityBundle,
> {
  readonly hooks: readonly H[]
  readonly capabilityBundles: readonly B[]
}

export interface SubagentCapabilityInheritancePolicy {
  readonly hooks: boolean
  readonly capabilityBundles: boolean
  readonly deniedCapabilities: readonly string[]
  resolve<H extends InheritableHook, B extends InheritableCapabilityBundle>(
    parent: InheritedCapabilities<H, B>,
  ): InheritedCapabilities<H, B>
}

export function createSubagentCapabilityInheritancePolicy(
  options: SubagentCapabilityInheritancePolicyOptions = {},
): SubagentCapabilityInheritancePolicy {
  const hooks = options.hooks ?? false
  const capabilityBundles = options.capabilityBundles ?? false
  const deniedCapabilities = [...new Set(options.deniedCapabilities ?? [])]
  const denied = new Set(deniedCapabilities)
  return {
    hooks,
    capabilityBundles,
    deniedCapabilities,
    resolve(parent) {
      return {
        hooks: hooks ? parent.hooks.filter((hook) => !denied.has(hook.capabilityId)) : [],
        capabilityBundles: capabilityBundles
          ? parent.capabilityBundles.filter(
              (bundle) => !denied.has(bundle.capabilityId) && !denied.has(bundle.name),
            )
          : [],
      }
    },
  }
}
