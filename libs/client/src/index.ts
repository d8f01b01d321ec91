export { BatonApiError, createBatonClient } from './client.ts'
export type {
  BatonAdmin,
  BatonClient,
  CallOptions,
  CreateClientOptions,
  DelegateInput,
} from './client.ts'
