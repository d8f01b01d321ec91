export { abortableDelay, abortReason, isAborted, untilAborted } from './abortable-delay.ts'
export { AgentsError, AgentsErrorCode, isAgentsError, WorkspacePathError } from './agents-error.ts'
export type { AgentsErrorOptions } from './agents-error.ts'
export { categorizeFailure, isAbortError } from './failure-category.ts'
export type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
} from './language-model.ts'
export { createScriptedModel } from './scripted-model.ts'
export type {
  CreateScriptedModelOptions,
  Script,
  ScriptedModel,
  ScriptedToolCall,
  ScriptStep,
} from './scripted-model.ts'
export { createScriptRegistry } from './script-registry.ts'
export type { ScriptRegistry } from './script-registry.ts'
export { ModelProviderPrefix, resolveModel } from './resolve-model.ts'
export type { ModelConfig } from './resolve-model.ts'
export { assistantText, promptText, runAgent } from './run-agent.ts'
export type {
  AgentLoopEvent,
  AgentOutcome,
  AgentUsage,
  CaptureToolBinding,
  RunAgentOptions,
} from './run-agent.ts'
export { createCaptureToolBinding } from './capture-tool.ts'
export {
  checkSessionLog,
  completedTurnPrefix,
  historySuffix,
  messagesOf,
  seedViolation,
  sessionEventSchema,
} from './session-events.ts'
export type {
  HistorySuffix,
  SessionEvent,
  SessionEventType,
  SessionLogCheck,
} from './session-events.ts'
export { createAgentRuntime } from './agent-runtime.ts'
export { createAsyncDelegationTools } from './async-delegation-tools.ts'
export type { AsyncDelegationBackend, DelegationToolAnswer } from './async-delegation-tools.ts'
export type {
  AgentRuntime,
  AgentRuntimeOptions,
  AgentTurn,
  CreateAgentOptions,
  LocalAgent,
  LocalSession,
  ToolScope,
  TurnOptions,
} from './agent-runtime.ts'
export { createChildLease, createLocalSubagentRun } from './local-subagent-run.ts'
export type { ChildLease, LocalSubagentRunInit } from './local-subagent-run.ts'
export {
  createForkProvider,
  createLocalSubagentProvider,
  createSpawnProvider,
  FORK_PROVIDER_CAPABILITIES,
  SPAWN_PROVIDER_CAPABILITIES,
} from './local-subagent-provider.ts'
export type { LocalSubagentProviderOptions } from './local-subagent-provider.ts'
export { isInside, resolveWorkspacePath } from './workspace-path.ts'
export {
  createWorkspaceTools,
  grepFiles,
  listDirectory,
  viewFile,
  WorkspaceToolName,
} from './workspace-tools.ts'
export { defaultTools } from './agent-runtime.ts'
export type { WorkspaceToolsOptions } from './workspace-tools.ts'
export { createAcpProvider, AcpProviderError, AcpStartErrorCode } from './acp/index.ts'
export type { AcpProviderOptions } from './acp/index.ts'
export { loadScriptDirectory } from './script-directory.ts'
export {
  createScriptedPromptProvider,
  parseScript as parsePromptScript,
} from './scripted-prompt-provider.ts'
