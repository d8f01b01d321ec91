// Entry points for tests and scripts that run a worker in-process. The process entry is main.ts.
export { loadConfig } from './config.ts'
export type { WorkerConfig } from './config.ts'
export { createWorkerRuntime } from './runtime.ts'
export type { WorkerRuntime } from './runtime.ts'
export { createLeaseKeeper } from './lease/lease-keeper.ts'
export type { LeaseKeeper, OwnedExecution } from './lease/lease-keeper.ts'
export { builtInSubagents, loadWorkerSubagents } from './subagents/subagent-catalog.ts'
export type { SubagentEntry, WorkerSubagents } from './subagents/subagent-catalog.ts'
