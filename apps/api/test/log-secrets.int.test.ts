import { describe, expect, test } from '@baton/testing'

const PROMPT_SECRET = 'PROMPT-SECRET-7f3a'
const STEER_SECRET = 'STEER-SECRET-91c2'
const ADMIN_SECRET = 'ADMIN-SECRET-2b8e-0123456789abcdef0123456789'
const WRONG_KEY_SECRET = 'bk_WRONGKEYSECRETWRONGKEYSECRETWRONGKEYSECRE'

describe('logs', () => {
  test('at trace level, neither API nor worker logs a prompt, steering text or a credential', async ({
    baton,
  }) => {
    const stack = await baton({
      env: { LOG_LEVEL: 'trace' },
      apiEnv: { ADMIN_API_KEY: ADMIN_SECRET },
    })
    const { base, key: KEY_SECRET, post } = stack

    // A completed run, a steered run, a failed run and a refused request, all carrying secrets.
    const done = await post('/v1/sessions/s-logs/delegations', {
      name: 'scripted',
      prompt: JSON.stringify({ output: PROMPT_SECRET }),
      wait: { timeoutMs: 10_000 },
    })
    expect(done.body).toMatchObject({ status: 'terminal', output: PROMPT_SECRET })
    const steered = await post('/v1/sessions/s-logs/delegations', {
      name: 'scripted',
      prompt: JSON.stringify({ awaitSteering: 1 }),
    })
    expect(
      (await post(`/v1/attempts/${steered.body.attemptId}/steer`, { content: STEER_SECRET }))
        .status,
    ).toBe(202)
    const steeredEnd = (
      await stack.get(`/v1/attempts/${steered.body.attemptId}/wait?timeoutMs=10000`)
    ).body
    expect(steeredEnd).toMatchObject({ status: 'terminal', output: STEER_SECRET })
    await post('/v1/sessions/s-logs/delegations', {
      name: 'scripted',
      prompt: JSON.stringify({ fail: PROMPT_SECRET }),
      wait: { timeoutMs: 10_000 },
    })
    expect(
      (await post('/v1/sessions/s-logs/delegations', { name: 'nobody', prompt: PROMPT_SECRET }))
        .status,
    ).toBe(400)
    // A refused key, and the admin issuing a key: neither the keys nor the issued one are logged.
    const wrong = await fetch(`${base}/v1/attempts/${steered.body.attemptId}`, {
      headers: { authorization: `Bearer ${WRONG_KEY_SECRET}` },
    })
    expect(wrong.status).toBe(401)
    const adminHeaders = {
      'content-type': 'application/json',
      authorization: `Bearer ${ADMIN_SECRET}`,
    }
    const issued = await fetch(`${base}/v1/admin/namespaces/default/keys`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ name: 'log test' }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { key: string } }))
    expect(issued.status).toBe(201)

    await stack.close()
    const apiLog = stack.api.output()
    const workerLog = stack.worker.output()
    // The logs are not empty: debug lines are there, so the test reads what an operator would.
    expect(apiLog).toContain('"msg":"delegation accepted"')
    expect(workerLog.length).toBeGreaterThan(0)
    expect(apiLog).toContain('"msg":"API key issued"')
    for (const secret of [
      PROMPT_SECRET,
      STEER_SECRET,
      KEY_SECRET,
      ADMIN_SECRET,
      WRONG_KEY_SECRET,
      issued.body.key,
    ]) {
      expect(apiLog, `API log contains ${secret}`).not.toContain(secret)
      expect(workerLog, `worker log contains ${secret}`).not.toContain(secret)
    }
  })
})
