export { BatonApiError, createBatonClient } from './client.ts'
export { DeliveryVerificationError, verifyDelivery } from './verify-delivery.ts'
export type { VerifiedDelivery } from './verify-delivery.ts'
export type {
  BatonAdmin,
  Artifact,
  BatonClient,
  CallOptions,
  CreateClientOptions,
  DelegateInput,
} from './client.ts'
