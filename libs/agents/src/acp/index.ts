export { createAcpProvider } from './acp-provider.ts'
export type { AcpProviderOptions } from './acp-provider.ts'
export { AcpProviderError, AcpStartErrorCode } from './errors.ts'
