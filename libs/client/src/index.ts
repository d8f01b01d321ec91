export { BatonApiError, createBatonClient } from './client.ts'
export type {
  BatonAdmin,
  Artifact,
  BatonClient,
  CallOptions,
  CreateClientOptions,
  DelegateInput,
} from './client.ts'
