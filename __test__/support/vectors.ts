// Loads spec/vectors.json: CONTRACT.md §3 as data, the same file `cargo test` reads.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface VectorCase<I = unknown, E = unknown> {
  input: I
  expected: E
  src: 'T' | 'I' | 'N' | 'D' | string
  note?: string
}

const all = JSON.parse(readFileSync(join(__dirname, '..', '..', 'spec', 'vectors.json'), 'utf8')) as Record<
  string,
  VectorCase[]
>

export function cases<I = unknown, E = unknown>(name: string): VectorCase<I, E>[] {
  const list = all[name]
  if (!Array.isArray(list) || list.length === 0) throw new Error(`vectors.json has no cases for ${name}`)
  return list as VectorCase<I, E>[]
}

/** A short, printable title for a case. */
export function title(c: VectorCase): string {
  const text = JSON.stringify(c.input)
  return `${c.src} ${text.length > 90 ? `${text.slice(0, 90)}…` : text}`
}
