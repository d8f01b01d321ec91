export { BatonApiError, createBatonClient } from './client.ts'
export type { BatonClient, CallOptions, CreateClientOptions, DelegateInput } from './client.ts'
