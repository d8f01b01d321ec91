export { BatonApiError, createBatonClient } from './client.ts'
export type { BatonClient, CreateClientOptions, DelegateInput } from './client.ts'
