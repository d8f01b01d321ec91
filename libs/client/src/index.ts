export { BatonApiError, createBatonClient } from './client.ts'
export type {
  Artifact,
  BatonClient,
  CallOptions,
  CreateClientOptions,
  DelegateInput,
} from './client.ts'
