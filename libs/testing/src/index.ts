export { test, describe, expect } from './fixtures.ts'
export type { Closeable, ServiceFixtures } from './fixtures.ts'
export { eventually } from './eventually.ts'
