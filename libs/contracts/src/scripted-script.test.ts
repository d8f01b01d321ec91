import { describe, expect, it } from 'vitest'
import { readScript, SCRIPT_OUTPUT_BYTES_MAX } from './scripted-script.ts'
import { isStorableText } from './storable-text.ts'

const text = (t: string) => [{ type: 'text' as const, text: t }]

describe('readScript', () => {
  it('reads a script, echoes what is not a JSON object, and flags an object that is no script', () => {
    expect(readScript(text(' {"output":"hi","delayMs":5} '))).toEqual({
      kind: 'script',
      script: { output: 'hi', delayMs: 5 },
    })
    expect(readScript(text('hello'))).toEqual({ kind: 'echo', text: 'hello' })
    expect(readScript(text('{not json'))).toEqual({ kind: 'echo', text: '{not json' })
    expect(readScript(text('{"fail":true}'))).toMatchObject({
      kind: 'invalid',
      issues: [{ path: 'script/fail' }],
    })
    expect(readScript(text(`{"outputBytes":${SCRIPT_OUTPUT_BYTES_MAX + 1}}`))).toMatchObject({
      kind: 'invalid',
      issues: [{ path: 'script/outputBytes' }],
    })
    expect(readScript(text('{"extra":1}'))).toMatchObject({ kind: 'invalid' })
  })
})

describe('isStorableText', () => {
  it('refuses U+0000 and lone surrogates, keeps everything else', () => {
    expect(isStorableText('  padded \n')).toBe(true)
    expect(isStorableText('emoji \ud83d\ude00 and \u00e9')).toBe(true)
    expect(isStorableText('a\u0000b')).toBe(false)
    expect(isStorableText('a\ud800b')).toBe(false)
    expect(isStorableText('a\udc00')).toBe(false)
  })
})
