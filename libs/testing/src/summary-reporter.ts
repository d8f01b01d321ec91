import type { Reporter, TestModule } from 'vitest/node'

/**
 * Ends a run with one plain line, `tests: N passed, N failed, N skipped`, after vitest's own
 * report, so any log reader (CI included) can tell how many tests ran without parsing colours.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') passed += 1
        else if (state === 'failed') failed += 1
        else skipped += 1
      }
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`)
  }
}
