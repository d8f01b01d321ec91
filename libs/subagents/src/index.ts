export type {
  Agent,
  AgentOptions,
  ContentBlock,
  OutputBudget,
  SessionHeader,
  SessionId,
  StructuredOutputSchema,
  SubagentCapabilities,
  SubagentHistoryEvent,
  SubagentProvider,
  SubagentResult,
  SubagentRun,
  SubagentStartRequest,
  SubagentStopReason,
  SubagentStopReasonMap,
  TextContentBlock,
  ToolRestriction,
} from './types.ts'

export { isSubagentError, SubagentError, SubagentErrorCode } from './errors.ts'
export type { SubagentErrorOptions } from './errors.ts'

export { NO_START_CAPABILITIES, createSubagentService } from './subagent-service.ts'
export type {
  SubagentRunEnd,
  SubagentRunIdentity,
  SubagentService,
  SubagentServiceEvent,
  SubagentServiceListener,
  SubagentServiceOptions,
} from './subagent-service.ts'

export {
  assertValidMaxDepth,
  childDepthFields,
  deriveChildDepth,
  readDelegationDepth,
  resumedChildDepth,
} from './delegation-depth.ts'

export {
  assertSupportedOutputSchema,
  CAPTURE_TOOL_NAME,
  createCaptureToolDefinition,
  createStructuredCapture,
  settleStructuredResult,
  validateAgainstOutputSchema,
} from './output-schema.ts'
export type {
  CaptureAttempt,
  ChildTurnOutcome,
  OutputValidation,
  StructuredCapture,
} from './output-schema.ts'

export { applyToolFilter } from './tool-filter.ts'
export { interpolatePersona } from './persona.ts'

export type { ToolDescriptor } from './tool-descriptor.ts'
export {
  AUTO_INHERIT_METADATA_KEY,
  createSubagentToolInheritancePolicy,
  MAIN_AGENT_ONLY_TOOLS,
} from './tool-inheritance-policy.ts'
export type {
  SubagentToolInheritancePolicy,
  SubagentToolInheritancePolicyOptions,
  ToolInheritanceDiagnostic,
  ToolInheritanceDiagnosticKind,
  ToolInheritanceResolution,
} from './tool-inheritance-policy.ts'

export { createSubagentCapabilityInheritancePolicy } from './capability-inheritance-policy.ts'
export type {
  InheritableCapabilityBundle,
  InheritableHook,
  InheritedCapabilities,
  SubagentCapabilityInheritancePolicy,
  SubagentCapabilityInheritancePolicyOptions,
} from './capability-inheritance-policy.ts'

export { parseSubagentMarkdown } from './subagent-spec.ts'
export type { SubagentSpec } from './subagent-spec.ts'
export { CAPABILITY_POLICY_METADATA_KEY, projectSubagentSpec } from './subagent-spec-projection.ts'
export type {
  AgentSpec,
  ProjectSubagentSpecOptions,
  SubagentSpecProjection,
} from './subagent-spec-projection.ts'
export { loadSubagentDirectory } from './subagent-directory.ts'

export { createAgentContext, createLifecycleLog, createUsageTracker } from './agent-context.ts'
export type {
  AgentContext,
  AgentContextInit,
  LifecycleRecord,
  LifecycleLog,
  Usage,
  UsageTracker,
} from './agent-context.ts'
export { createSubagentTask } from './subagent-task.ts'
export type {
  DelegatedSubagent,
  SubagentRunOutput,
  SubagentTask,
  SubagentTaskInput,
} from './subagent-task.ts'
export type {
  SubagentExecutionHook,
  SubagentExecutionMetadata,
  SubagentExecutionOutcome,
} from './execution-hook.ts'
export { asSubagentLifecycleEvent, SubagentLifecycleEventKind } from './subagent-lifecycle.ts'
export type { SubagentLifecycleEvent } from './subagent-lifecycle.ts'
export {
  createSubagentRegistry,
  readSubagentStack,
  SUBAGENT_STACK_METADATA_KEY,
} from './subagent-registry.ts'
export type {
  SubagentConfig,
  SubagentInfo,
  SubagentRegistry,
  SubagentRegistryOptions,
  SubagentRunner,
  SubagentStackFrame,
} from './subagent-registry.ts'
export {
  createDelegateTool,
  createSubagentInfoTool,
  delegateToolInputSchema,
} from './delegate-tool.ts'
export type {
  CallableTool,
  DelegateTool,
  DelegateToolInput,
  DelegateToolOutput,
} from './delegate-tool.ts'
export {
  DELEGATION_TOOL_NAMES,
  delegationToolNames,
  SubagentDelegationMode,
} from './delegation-mode.ts'
export {
  ASYNC_DELEGATION_INPUTS,
  asyncDelegationToolDefinitions,
  delegationToolDefinitions,
} from './delegation-tools.ts'
export { subagentTransport, transportSteerable } from './subagent-transport.ts'
export type { SubagentTransport } from './subagent-transport.ts'
export {
  BUILT_IN_SUBAGENT,
  createSubagentCatalog,
  loadSubagentCatalog,
  WORKSPACE_TOOLS,
} from './subagent-catalog.ts'
export type {
  LoadSubagentCatalogOptions,
  RefusedSubagent,
  RunnableSubagent,
  SubagentAdmission,
  SubagentCatalog,
  SubagentCatalogLogger,
  SubagentCatalogOptions,
  SubagentLaunch,
} from './subagent-catalog.ts'
export {
  exceededBudget,
  hasBudgets,
  loadProfiles,
  parseProfiles,
  PROFILE_TOOLSETS,
  profileSubagentSpecs,
} from './profiles.ts'
export type {
  BudgetExceeded,
  BudgetUse,
  Profile,
  ProfileBudgets,
  ProfileFile,
  ProfileSubagent,
} from './profiles.ts'
