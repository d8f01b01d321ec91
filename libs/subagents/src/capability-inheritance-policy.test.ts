import { describe, expect, it } from 'vitest'
import { createSubagentCapabilityInheritancePolicy } from './capability-inheritance-policy.ts'

const parent = {
  hooks: [{ capabilityId: 'audit' }, { capabilityId: 'approval' }],
  capabilityBundles: [
    { capabilityId: 'bundle.fs', name: 'filesystem' },
    { capabilityId: 'bundle.web', name: 'web' },
  ],
}

describe('SubagentCapabilityInheritancePolicy', () => {
  it('inherits no hooks or bundles by default', () => {
    expect(createSubagentCapabilityInheritancePolicy().resolve(parent)).toEqual({
      hooks: [],
      capabilityBundles: [],
    })
  })

  it('inherits parent hooks only when hooks is enabled', () => {
    const resolved = createSubagentCapabilityInheritancePolicy({ hooks: true }).resolve(parent)
    expect(resolved).toEqual({ hooks: parent.hooks, capabilityBundles: [] })
  })

  it('inherits capability bundles only when capabilityBundles is enabled', () => {
    const resolved = createSubagentCapabilityInheritancePolicy({ capabilityBundles: true }).resolve(
      parent,
    )
    expect(resolved).toEqual({ hooks: [], capabilityBundles: parent.capabilityBundles })
  })

  it('filters denied capabilities by hook capability id, bundle capability id or bundle name', () => {
    const resolved = createSubagentCapabilityInheritancePolicy({
      hooks: true,
      capabilityBundles: true,
      deniedCapabilities: ['approval', 'bundle.fs', 'web'],
    }).resolve(parent)
    expect(resolved).toEqual({ hooks: [{ capabilityId: 'audit' }], capabilityBundles: [] })
  })
})
