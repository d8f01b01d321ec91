import type { TestProject } from 'vitest/node'
import { setupLedger } from './global-setup.ts'

/** The `store-hash-partitioned` project's setup: its template's ledger is hash-partitioned. */
export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return setupLedger(project, 'hash-partitioned')
}
