// Every CONTRACT.md §3 vector of an exported function, through the built addon.
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

import * as ts from '../index.js'
import { cases, title } from './support/vectors'

type StringFn = (input: string) => unknown
const direct: Record<string, StringFn> = {
  detectBlockedSleepPattern: ts.detectBlockedSleepPattern,
  blockedSleepMessage: ts.blockedSleepMessage,
  stripTrailingBackgroundAmp: ts.stripTrailingBackgroundAmp,
  trimTrailingShellComment: ts.trimTrailingShellComment,
  hasTopLevelTrailingBackgroundOperator: ts.hasTopLevelTrailingBackgroundOperator,
  stripShellWrapper: ts.stripShellWrapper,
  detectCommandSubstitution: ts.detectCommandSubstitution,
  normalizeMonitorCommand: ts.normalizeMonitorCommand,
  sanitizeMonitorLine: ts.sanitizeMonitorLine,
  escapeXml: ts.escapeXml,
  stripDisplayControlChars: ts.stripDisplayControlChars,
  truncateNotificationLabel: ts.truncateNotificationLabel,
  statusFilePathFor: ts.statusFilePathFor,
  sanitizeFilenameComponent: ts.sanitizeFilenameComponent,
  stripAnsi: ts.stripAnsi,
}

for (const [name, fn] of Object.entries(direct)) {
  describe(name, () => {
    it.each(cases<string>(name).map((c) => [title(c), c] as const))('%s', (_t, c) => {
      expect(fn(c.input)).toStrictEqual(c.expected)
    })
  })
}

const scratch = mkdtempSync(join(tmpdir(), 'taskstream-vectors-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('validateMonitorParams', () => {
  interface Input {
    params: Record<string, unknown>
    ctx: { workspaceDirs: string[]; userSkillsDirs?: string[] }
  }
  // A `requires:` row needs a real symlink under the workspace root: build it in a
  // scratch root and substitute that root for /srv/project-a.
  const root = join(scratch, 'project-a')
  mkdirSync(root)
  symlinkSync('/etc', join(root, 'link'))
  const substitute = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.replaceAll('/srv/project-a', root)
      : Array.isArray(v)
        ? v.map(substitute)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x)]))
          : v

  it.each(cases<Input, string | null>('validateMonitorParams').map((c) => [title(c), c] as const))('%s', (_t, c) => {
    const needsFs = c.note?.startsWith('requires:') ?? false
    const input = (needsFs ? substitute(c.input) : c.input) as Input
    const expected = needsFs ? substitute(c.expected) : c.expected
    expect(ts.validateMonitorParams(input.params as unknown as ts.MonitorToolParams, input.ctx)).toBe(expected)
  })

  it('rejects non-final background operators exactly where hasUnsafeMonitorBackgroundOperator says so', () => {
    const message =
      'Monitor commands must not contain non-final top-level background operators. Remove "&" and let the monitor manage process lifetime.'
    for (const c of cases<string, boolean>('hasUnsafeMonitorBackgroundOperator')) {
      const result = ts.validateMonitorParams({ command: c.input }, { workspaceDirs: ['/'] })
      expect(result === message, title(c)).toBe(c.expected)
    }
  })
})

describe('isBinary', () => {
  it.each(cases<{ bytesHex: string; sampleSize?: number }, boolean>('isBinary').map((c) => [c.note ?? '', c] as const))(
    '%s',
    (_t, c) => {
      const bytes = Buffer.from(c.input.bytesHex, 'hex')
      expect(ts.isBinary(bytes, c.input.sampleSize)).toBe(c.expected)
      expect(ts.isBinary(new Uint8Array(bytes), c.input.sampleSize)).toBe(c.expected)
    },
  )
})

describe('readTaskOutputTail', () => {
  it.each(
    cases<{ fileContent: string; maxBytes?: number }, unknown>('readTaskOutputTail').map((c, i) => [title(c), c, i] as const),
  )('%s', (_t, c, i) => {
    const file = join(scratch, `tail-${i}.output`)
    writeFileSync(file, c.input.fileContent, 'utf8')
    expect(ts.readTaskOutputTail(file, c.input.maxBytes)).toStrictEqual(c.expected)
  })
})

describe('LineBuffer', () => {
  type Call = string | { flush: true }
  it.each(
    cases<{ chunks: Call[]; options: { maxLineCodePoints?: number } }, string[][]>('LineBuffer').map(
      (c) => [title(c), c] as const,
    ),
  )('%s', (_t, c) => {
    const buffer = new ts.LineBuffer(c.input.options)
    const results = c.input.chunks.map((call) => (typeof call === 'string' ? buffer.push(call) : buffer.flush()))
    expect(results).toStrictEqual(c.expected)
  })
})
