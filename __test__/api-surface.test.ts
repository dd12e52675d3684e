// The binding's surface: argument errors name the argument, stateful text
// pieces give the same result however the input is split, and the generated
// typings stay exact.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import * as ts from '../index.js'
import { cases } from './support/vectors'

const stringFunctions = [
  ['detectBlockedSleepPattern', 'command'],
  ['blockedSleepMessage', 'command'],
  ['stripTrailingBackgroundAmp', 'command'],
  ['trimTrailingShellComment', 'command'],
  ['stripShellWrapper', 'command'],
  ['hasTopLevelTrailingBackgroundOperator', 'command'],
  ['hasNonFinalTopLevelBackgroundOperator', 'command'],
  ['detectCommandSubstitution', 'command'],
  ['normalizeMonitorCommand', 'command'],
  ['sanitizeMonitorLine', 'line'],
  ['escapeXml', 'text'],
  ['stripDisplayControlChars', 'text'],
  ['stripAnsi', 'text'],
  ['truncateNotificationLabel', 'label'],
  ['sanitizeFilenameComponent', 'value'],
  ['statusFilePathFor', 'outputFile'],
  ['readTaskOutputTail', 'outputFile'],
  ['readTaskOutput', 'outputFile'],
] as const

describe('wrong argument types', () => {
  it.each(stringFunctions)('%s rejects a non-string with a TypeError naming "%s"', (name, arg) => {
    const fn = (ts as unknown as Record<string, (...a: unknown[]) => unknown>)[name]
    for (const bad of [undefined, null, 42, {}, ['x'], Symbol('s')]) {
      let error: unknown
      try {
        fn(bad)
      } catch (e) {
        error = e
      }
      expect(error, `${name}(${String(bad)})`).toBeInstanceOf(TypeError)
      expect((error as Error).message).toContain(`"${arg}"`)
    }
  })

  it('validateMonitorParams: params and ctx must be objects, workspaceDirs an array of strings', () => {
    const call = (p: unknown, c: unknown) => () =>
      ts.validateMonitorParams(p as ts.MonitorToolParams, c as ts.MonitorValidationContext)
    expect(call(null, { workspaceDirs: [] })).toThrowError(TypeError)
    expect(call({ command: 'x' }, undefined)).toThrowError(/"ctx"/)
    expect(call({ command: 'x' }, { workspaceDirs: '/srv' })).toThrowError(/"ctx.workspaceDirs"/)
    expect(call({ command: 'x' }, { workspaceDirs: [1] })).toThrowError(TypeError)
    expect(call({ command: 'x' }, { workspaceDirs: [], userSkillsDirs: [null] })).toThrowError(/"ctx.userSkillsDirs"/)
    // Bad parameter *values* are validation results, never throws.
    expect(ts.validateMonitorParams({ command: 123 } as unknown as ts.MonitorToolParams, { workspaceDirs: [] })).toBe(
      'Command cannot be empty.',
    )
  })

  it('isBinary wants bytes and a non-negative integer sample size', () => {
    expect(() => ts.isBinary('abc' as unknown as Buffer)).toThrowError(TypeError)
    expect(() => ts.isBinary('abc' as unknown as Buffer)).toThrowError(/"bytes"/)
    expect(() => ts.isBinary(Buffer.alloc(1), -1)).toThrowError(RangeError)
    expect(() => ts.isBinary(Buffer.alloc(1), 1.5)).toThrowError(/"sampleSize"/)
    expect(() => ts.isBinary(Buffer.alloc(1), '5' as unknown as number)).toThrowError(TypeError)
  })

  it('isBinary takes Buffer, Uint8Array, Uint8ClampedArray and Int8Array, and nothing else', () => {
    for (const bytes of [new Float64Array(4), new DataView(new ArrayBuffer(4)), new Uint16Array(2), new ArrayBuffer(4), [0, 1]]) {
      expect(() => ts.isBinary(bytes as unknown as Buffer)).toThrowError(TypeError)
    }
    expect(() => ts.isBinary(new Float64Array(4) as unknown as Buffer)).toThrowError(
      'The "bytes" argument must be an instance of Buffer or Uint8Array. Received an instance of Float64Array',
    )
    expect(() => ts.isBinary(new DataView(new ArrayBuffer(4)) as unknown as Buffer)).toThrowError(
      'The "bytes" argument must be an instance of Buffer or Uint8Array. Received an instance of DataView',
    )
    expect(() => ts.isBinary([0] as unknown as Buffer)).toThrowError(/Received an instance of Array$/)
    let error: unknown
    try {
      ts.isBinary(new Float64Array(1) as unknown as Buffer)
    } catch (e) {
      error = e
    }
    expect(error).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    expect(ts.isBinary(new Uint8ClampedArray([1, 0]))).toBe(true)
    expect(ts.isBinary(new Int8Array([1, 0]))).toBe(true)
    expect(ts.isBinary(new Int8Array([1, 2]))).toBe(false)
    // Views are read from their own offset and length.
    expect(ts.isBinary(Buffer.from([0, 1, 2]).subarray(1))).toBe(false)
    expect(ts.isBinary(new Uint8Array([1, 0]).subarray(0, 1))).toBe(false)
    expect(ts.isBinary(new Uint8Array([1, 2, 0]).subarray(1))).toBe(true)
    expect(ts.isBinary(new Uint8Array(0))).toBe(false)
  })

  it('LineBuffer validates its options and chunks', () => {
    expect(() => new ts.LineBuffer({ truncationMarker: 5 as unknown as string })).toThrowError(TypeError)
    expect(() => new ts.LineBuffer({ truncationMarker: 5 as unknown as string })).toThrowError(
      'The "options.truncationMarker" property must be of type string. Received type number (5)',
    )
    expect(() => new ts.LineBuffer({ truncationMarker: null as unknown as string })).toThrowError(/"options.truncationMarker"/)
    expect(() => new ts.LineBuffer({ maxLineCodePoints: 0 })).toThrowError(RangeError)
    expect(() => new ts.LineBuffer({ maxLineCodePoints: 0 })).toThrowError(/"options.maxLineCodePoints"/)
    expect(() => new ts.LineBuffer({ maxLineCodePoints: 2.5 })).toThrowError(RangeError)
    expect(() => new ts.LineBuffer('big' as unknown as ts.LineBufferOptions)).toThrowError(TypeError)
    expect(() => new ts.LineBuffer().push(7 as unknown as string)).toThrowError(/"chunk"/)
  })

  it('readTaskOutputTail rejects a bad maxBytes', () => {
    expect(() => ts.readTaskOutputTail('/tmp/x', -5)).toThrowError(RangeError)
    expect(() => ts.readTaskOutputTail('/tmp/x', 'all' as unknown as number)).toThrowError(TypeError)
  })
})

describe('LineBuffer gives the same lines however its input is split', () => {
  const uncapped = cases<{ chunks: (string | { flush: true })[]; options: { maxLineCodePoints?: number } }, string[][]>(
    'LineBuffer',
  ).filter((c) => c.input.options.maxLineCodePoints === undefined)

  it.each(uncapped.map((c, i) => [i, c] as const))('vector %i split at every offset', (_i, c) => {
    const text = c.input.chunks.filter((x): x is string => typeof x === 'string').join('')
    const whole = new ts.LineBuffer()
    const expected = [...whole.push(text), ...whole.flush()]
    const units = [...text] // split between code points, never inside a surrogate pair
    for (let cut = 0; cut <= units.length; cut++) {
      const b = new ts.LineBuffer()
      const got = [...b.push(units.slice(0, cut).join('')), ...b.push(units.slice(cut).join('')), ...b.flush()]
      expect(got, `cut at ${cut}`).toEqual(expected)
    }
  })

  it('a long mixed text split into single characters', () => {
    const text = 'alpha\r\nbeta\rgamma\n\n😀 emoji line\r\r\nlast'
    const whole = new ts.LineBuffer()
    const expected = [...whole.push(text), ...whole.flush()]
    const b = new ts.LineBuffer()
    const got = [...[...text].flatMap((ch) => b.push(ch)), ...b.flush()]
    expect(got).toEqual(expected)
    expect(expected).toEqual(['alpha', 'beta\rgamma', '', '😀 emoji line\r', 'last'])
  })
})

describe('LineBuffer options and surrogate pairs (API.md §2)', () => {
  it('uses the truncationMarker it was given, the empty one too', () => {
    const b = new ts.LineBuffer({ maxLineCodePoints: 4, truncationMarker: '[T]' })
    expect(b.push('abcdef\n')).toEqual(['abcd[T]'])
    expect(b.push('ghijkl')).toEqual(['ghij[T]'])
    expect(b.push('mn\nok\n')).toEqual(['ok'])
    expect(new ts.LineBuffer({ maxLineCodePoints: 2, truncationMarker: '' }).push('abc\n')).toEqual(['ab'])
    expect(new ts.LineBuffer({ maxLineCodePoints: 2 }).push('abc\n')).toEqual(['ab[…truncated]'])
  })

  it('keeps a surrogate pair split across two pushes as one character', () => {
    const b = new ts.LineBuffer()
    expect(b.push('\uD83D')).toEqual([])
    expect(b.push('\uDE42\n')).toEqual(['🙂'])
    // The cap counts it as one code point.
    const capped = new ts.LineBuffer({ maxLineCodePoints: 1 })
    expect(capped.push('\uD83D')).toEqual([])
    expect(capped.push('\uDE42')).toEqual([])
    expect(capped.push('\n')).toEqual(['🙂'])
  })

  it('turns a surrogate that never gets its other half into U+FFFD', () => {
    const b = new ts.LineBuffer()
    expect(b.push('a\uD83D')).toEqual([])
    expect(b.push('b\n')).toEqual(['a\uFFFDb'])
    expect(b.push('\uDE42x\n')).toEqual(['\uFFFDx'])
    expect(b.push('c\uD83D')).toEqual([])
    expect(b.flush()).toEqual(['c\uFFFD'])
    expect(b.flush()).toEqual([])
  })

  it('any UTF-16 split of a text with emoji gives the lines of the whole', () => {
    const text = 'a🙂b\r\n🐱🐱\n\nlast😀'
    const whole = new ts.LineBuffer()
    const expected = [...whole.push(text), ...whole.flush()]
    expect(expected).toEqual(['a🙂b', '🐱🐱', '', 'last😀'])
    for (let cut = 0; cut <= text.length; cut++) {
      const b = new ts.LineBuffer()
      const got = [...b.push(text.slice(0, cut)), ...b.push(text.slice(cut)), ...b.flush()]
      expect(got, `cut at unit ${cut}`).toEqual(expected)
    }
  })
})

describe('generated typings', () => {
  const dts = readFileSync(join(__dirname, '..', 'index.d.ts'), 'utf8')
  const code = dts.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')

  it('use no `any` and no const enums', () => {
    expect(code).not.toMatch(/\bany\b/)
    expect(code).not.toMatch(/const enum/)
  })

  it('declare every API.md name', () => {
    for (const name of [
      'detectBlockedSleepPattern',
      'blockedSleepMessage',
      'stripTrailingBackgroundAmp',
      'trimTrailingShellComment',
      'stripShellWrapper',
      'hasTopLevelTrailingBackgroundOperator',
      'hasNonFinalTopLevelBackgroundOperator',
      'detectCommandSubstitution',
      'normalizeMonitorCommand',
      'validateMonitorParams',
      'sanitizeMonitorLine',
      'escapeXml',
      'stripDisplayControlChars',
      'stripAnsi',
      'isBinary',
      'sanitizeFilenameComponent',
      'class LineBuffer',
      'class MonitorRegistry',
      'readTaskOutputTail',
      'readTaskOutput',
      'statusFilePathFor',
    ]) {
      expect(code, name).toContain(name)
    }
    expect(code).toMatch(/export type MonitorStatus = 'running' \| 'completed' \| 'failed' \| 'cancelled'/)
  })
})
