// The `read_background_output` tool: reads what is new in a background shell's output file,
// bounded, through taskstream's readTaskOutput. The model passes back the `next_offset` it was
// given, so a check of a long build log costs a few tokens instead of the whole file, and a
// `grep` keeps only the lines that matter.
import { readTaskOutput } from 'taskstream'

import { toolError, type CliContext, type Tool, type ToolResult } from './types.js'

export const READ_OUTPUT_TOOL_NAME = 'read_background_output'
/** What one read returns at most: about 2000 tokens. */
export const READ_OUTPUT_MAX_BYTES = 8192

export interface ReadOutputParams {
  task_id: string
  /** Where to start: 0, or the `next_offset` of the previous read. */
  offset?: number
  /** Keep only lines matching this regular expression (Rust syntax). */
  grep?: string
}

/** The function declaration the model sees. */
export const READ_OUTPUT_SCHEMA = {
  name: READ_OUTPUT_TOOL_NAME,
  description:
    "Reads a background shell's output from `offset` on (at most 8 KB per call), ANSI codes and progress redraws removed. " +
    'Pass the returned next_offset to read only what is new next time; use grep to keep only matching lines.',
  parameters: {
    type: 'object',
    properties: {
      task_id: { type: 'string', description: 'The id of a background shell (bg_…).' },
      offset: { type: 'number', description: 'Byte offset to start at: 0, or the next_offset of the previous read.' },
      grep: { type: 'string', description: 'Regular expression (Rust regex syntax): keep only matching lines.' },
    },
    required: ['task_id'],
  },
} as const

export class ReadOutputTool implements Tool<ReadOutputParams> {
  readonly name = READ_OUTPUT_TOOL_NAME

  constructor(private readonly ctx: CliContext) {}

  validate(params: ReadOutputParams): string | null {
    if (typeof params.task_id !== 'string' || params.task_id.trim() === '') return 'task_id must be a non-empty string.'
    if (params.offset !== undefined && !(Number.isSafeInteger(params.offset) && params.offset >= 0)) {
      return 'offset must be a non-negative integer.'
    }
    if (params.grep !== undefined && typeof params.grep !== 'string') return 'grep must be a string.'
    return null
  }

  execute(params: ReadOutputParams): ToolResult {
    const invalid = this.validate(params)
    if (invalid !== null) return toolError('invalid_tool_params', invalid)
    const shell = this.ctx.shells.get(params.task_id)
    if (!shell) return toolError('task_not_found', `No background shell with id "${params.task_id}".`)
    let read
    try {
      read = readTaskOutput(shell.outputFile, {
        offset: params.offset ?? 0,
        maxBytes: READ_OUTPUT_MAX_BYTES,
        ...(params.grep !== undefined ? { grep: params.grep } : {}),
      })
    } catch (error) {
      if (error instanceof SyntaxError) return toolError('invalid_tool_params', `Invalid grep: ${error.message}`)
      throw error
    }
    if ('error' in read) return toolError('execution_failed', `Cannot read the output of ${shell.id}: ${read.error}`)
    const where = `bytes ${read.offset}–${read.nextOffset} of ${read.totalBytes}`
    const more = read.truncated ? ' More output follows: read again from next_offset.' : ''
    const matched = read.matchedLines !== undefined ? `, ${read.matchedLines} matching lines` : ''
    const status = `Shell ${shell.id} is ${shell.status}.`
    return {
      llmContent: [
        `${status} Output ${where}${matched}; next_offset: ${read.nextOffset}.${more}`,
        read.text === '' ? '(no new output)' : read.text,
      ].join('\n'),
      returnDisplay: `Read ${read.nextOffset - read.offset} bytes of ${shell.id}`,
    }
  }
}
