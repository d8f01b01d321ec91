import { readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { FAILURE_CATEGORIES, failureCategorySchema } from './failure-category.ts'

describe('FailureCategory', () => {
  test('the schema accepts exactly the durable set', () => {
    for (const category of FAILURE_CATEGORIES)
      expect(failureCategorySchema.parse(category)).toBe(category)
    for (const other of ['refused', 'aborted', 'Refusal', '', 'x'.repeat(200)])
      expect(failureCategorySchema.safeParse(other).success).toBe(false)
  })

  test("the API guide's category table lists exactly the durable set", () => {
    const guide = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8')
    const table = guide.slice(guide.indexOf('| category'))
    const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2)
    const documented = rows.map((row) => /^\s*\| `([a-z_]+)`/.exec(row)?.[1])
    expect([...documented].sort()).toEqual([...FAILURE_CATEGORIES].sort())
  })
})
