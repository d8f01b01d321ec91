import { describe, expect, test } from 'vitest'
import { BatonError, ErrorCode } from '@baton/contracts'
import { STATUS } from './errors.ts'
import { refusalError, unlessRefused, type Refusal } from './refusals.ts'

const attemptId = '00000000-0000-4000-8000-000000000001'
const agentId = '00000000-0000-4000-8000-000000000002'

/** Every refusal kind, with the code, status and details a caller must see for it. */
const cases: readonly {
  refusal: Refusal
  code: ErrorCode
  status: number
  details?: Record<string, unknown>
}[] = [
  { refusal: { kind: 'missing', attemptId }, code: ErrorCode.AttemptNotFound, status: 404 },
  { refusal: { kind: 'terminal', attemptId }, code: ErrorCode.AttemptTerminal, status: 409 },
  {
    refusal: { kind: 'unknown_subagent', name: 'nope', known: ['scripted'] },
    code: ErrorCode.UnknownSubagent,
    status: 400,
    details: { known: ['scripted'] },
  },
  {
    refusal: { kind: 'subagent_unavailable', name: 'echoer', reason: 'provider disabled' },
    code: ErrorCode.SubagentUnavailable,
    status: 400,
    details: { reason: 'provider disabled' },
  },
  {
    refusal: { kind: 'steering_unsupported', name: 'echoer' },
    code: ErrorCode.SteeringUnsupported,
    status: 409,
  },
  {
    refusal: { kind: 'agent_not_found', agentId, sessionId: 's', name: 'scripted' },
    code: ErrorCode.AgentNotFound,
    status: 404,
  },
  {
    refusal: { kind: 'agent_busy', agentId },
    code: ErrorCode.AgentBusy,
    status: 409,
    details: { agentId },
  },
  { refusal: { kind: 'key_reused' }, code: ErrorCode.IdempotencyKeyReused, status: 409 },
  {
    refusal: { kind: 'invalid_script', issues: [{ path: 'script/fail', message: 'bad' }] },
    code: ErrorCode.ValidationFailed,
    status: 400,
    details: { issues: [{ path: 'body/prompt/script/fail', message: 'bad' }] },
  },
  {
    refusal: { kind: 'parent_attempt_ended', attemptId },
    code: ErrorCode.ParentAttemptEnded,
    status: 409,
  },
  {
    refusal: {
      kind: 'over_budget',
      sessionId: 's',
      budget: 'children_running',
      limit: 2,
      used: 2,
      message: 'over budget',
    },
    code: ErrorCode.BudgetExceeded,
    status: 409,
    details: { sessionId: 's', budget: 'children_running', limit: 2, used: 2 },
  },
]

describe('refusal → error mapper', () => {
  test.for(cases)('$refusal.kind → $code ($status)', ({ refusal, code, status, details }) => {
    const error = refusalError(refusal)
    expect(error).toBeInstanceOf(BatonError)
    expect(error.code).toBe(code)
    expect(STATUS[error.code]).toBe(status)
    expect(error.details).toEqual(details)
    expect(() => unlessRefused(refusal)).toThrow(error.message)
  })

  test('an outcome that is not a refusal passes through', () => {
    const outcome = { kind: 'recorded', sequence: 3 } as const
    expect(unlessRefused(outcome)).toBe(outcome)
  })
})
