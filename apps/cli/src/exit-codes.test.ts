import { readFile } from 'node:fs/promises'
import { BatonApiError } from '@baton/client'
import type { AttemptView } from '@baton/contracts'
import { describe, expect, test } from 'vitest'
import { describeFailure, exitCodeOfView, ExitCode } from './exit-codes.ts'
import { OutputFileError } from './output-file.ts'

const view: AttemptView = {
  attemptId: 'a1',
  agentId: 'g1',
  sessionId: 's1',
  name: 'scripted',
  status: 'running',
  createdAt: '',
  startedAt: null,
  cancelRequested: false,
  steering: { accepted: 0, delivered: 0 },
}
const ended = (stopReason: 'completed' | 'aborted' | 'error' | 'max-tokens' | 'refusal') => ({
  ...view,
  status: 'terminal' as const,
  stopReason,
  output: '',
  outputTruncated: false,
  outputBytes: 0,
  digest: '',
  failureCategory: null,
  terminalAt: '',
  context: null,
})

describe('exit codes', () => {
  test('a wait answer: 0 completed, 1 any other stop reason, 4 not terminal yet', () => {
    expect(exitCodeOfView(ended('completed'))).toBe(0)
    for (const reason of ['aborted', 'error', 'max-tokens', 'refusal'] as const) {
      expect(exitCodeOfView(ended(reason)), reason).toBe(1)
    }
    expect(exitCodeOfView(view)).toBe(4)
    expect(exitCodeOfView({ ...view, status: 'accepted' })).toBe(4)
  })

  test('a failed call: 3 with code and message for an API error, 5 when nothing answered, none for a bug', () => {
    expect(
      describeFailure(new BatonApiError(404, 'ATTEMPT_NOT_FOUND', 'no attempt x'), 'http://h'),
    ).toEqual({
      exitCode: ExitCode.ApiError,
      message: 'ATTEMPT_NOT_FOUND (HTTP 404): no attempt x',
    })
    const refused = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') })
    expect(describeFailure(refused, 'http://h')).toEqual({
      exitCode: 5,
      message: 'cannot reach http://h: connect ECONNREFUSED',
    })
    expect(describeFailure(new DOMException('t', 'TimeoutError'), 'http://h')?.exitCode).toBe(5)
    expect(describeFailure(new RangeError('bug'), 'http://h')).toBeUndefined()
    expect(describeFailure('not an error', 'http://h')).toBeUndefined()
  })

  test('6 when an artifact does not match its digest (stored or received), 7 when the output file cannot be written', () => {
    const stored = new BatonApiError(
      500,
      'ARTIFACT_INTEGRITY',
      'the stored artifact does not match',
    )
    expect(describeFailure(stored, 'http://h')).toEqual({
      exitCode: ExitCode.Integrity,
      message: 'ARTIFACT_INTEGRITY (HTTP 500): the stored artifact does not match',
    })
    const received = new BatonApiError(200, 'ARTIFACT_INTEGRITY', 'the received artifact …')
    expect(describeFailure(received, 'http://h')?.exitCode).toBe(6)
    const expired = new BatonApiError(410, 'ARTIFACT_EXPIRED', 'the artifact expired')
    expect(describeFailure(expired, 'http://h')?.exitCode).toBe(3)
    const unwritable = new OutputFileError(
      '/x/out',
      new Error("ENOENT: no such file or directory, open '/x/out'"),
    )
    expect(describeFailure(unwritable, 'http://h')).toEqual({
      exitCode: 7,
      message: "cannot write /x/out: ENOENT: no such file or directory, open '/x/out'",
    })
  })

  test("the operations guide's exit-code table documents exactly these codes, in order", async () => {
    const guide = await readFile(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
    const cli = guide.slice(
      guide.indexOf('## CLI'),
      guide.indexOf('\n## ', guide.indexOf('## CLI') + 1),
    )
    const table = cli.slice(cli.indexOf('| exit |'))
    const documented = [...table.matchAll(/^\| (\d+) +\|/gm)].map((m) => Number(m[1]))
    expect(documented).toEqual(Object.values(ExitCode))
  })
})
