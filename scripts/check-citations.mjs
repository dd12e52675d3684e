// Checks that every contract citation in the code resolves: each `CONTRACT.md §X` and
// `API.md §X` in a comment of src/ and index.d.ts (and of the tests, benchmarks, scripts, fuzz
// harness, examples and integrations) must name a numbered heading of docs/CONTRACT.md or
// docs/API.md. Run by `npm test` (`npm run check`).
//
// How a citation is read: the comment lines that follow each other form one comment; a file
// name (`CONTRACT.md`, `API.md`) in it applies to every `§X` after it in that comment, up to the
// next file name ("CONTRACT.md §1.5, §2.11; vectors §3.1–3.6" cites four sections of CONTRACT.md,
// both ends of a range included). A `§X` with no file name before it in its comment is a short
// citation: it must resolve in one of the two files. `§2.15 item 12` resolves to the heading
// `2.15`; items and steps are not checked. A section cited after the name of any other `*.md`
// file fails too: only these two pages of the contract are in the repository.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The numbered headings of a docs page: `## 2.15 …` gives `2.15`. */
function headings(file) {
  const found = new Set()
  for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
    const m = /^#{1,6}\s+§?(\d+(?:\.\d+)*)\.?\s/.exec(line)
    if (m) found.add(m[1])
  }
  if (found.size === 0) throw new Error(`${file} has no numbered headings`)
  return found
}

const sections = { 'CONTRACT.md': headings('docs/CONTRACT.md'), 'API.md': headings('docs/API.md') }

function sourceFiles(dir) {
  const out = []
  for (const name of readdirSync(join(root, dir)).sort()) {
    if (name === 'node_modules' || name === 'target' || name.startsWith('.')) continue
    const path = join(dir, name)
    if (statSync(join(root, path)).isDirectory()) out.push(...sourceFiles(path))
    else if (/\.(rs|ts|js|mjs)$/.test(name)) out.push(path)
  }
  return out
}

/** Comment blocks: runs of consecutive comment lines, each line with its number. */
function commentBlocks(text) {
  const blocks = []
  let block = null
  let inBlockComment = false
  text.split('\n').forEach((line, i) => {
    let comment = null
    const trimmed = line.trim()
    if (inBlockComment) {
      comment = trimmed
      if (trimmed.includes('*/')) inBlockComment = false
    } else if (trimmed.startsWith('//')) {
      comment = trimmed.replace(/^\/\/[/!]?/, '')
    } else if (trimmed.startsWith('/*')) {
      comment = trimmed
      inBlockComment = !trimmed.includes('*/')
    } else {
      const at = line.indexOf('//')
      if (at >= 0 && !/["'`]/.test(line.slice(0, at)) && !/:$/.test(line.slice(0, at))) {
        comment = line.slice(at + 2)
      }
    }
    if (comment === null) {
      block = null
      return
    }
    if (!block) {
      block = []
      blocks.push(block)
    }
    block.push({ line: i + 1, text: comment })
  })
  return blocks
}

const TOKEN = /(?<![\w.-])([A-Z][A-Za-z_]*\.md)\b|§\s?(\d+(?:\.\d+)*)(?:\s?[–-]\s?§?(\d+(?:\.\d+)*))?/g

const failures = []
let count = 0
// Where comments are read: the crate, the tests, the benchmarks, the scripts, the fuzz harness,
// the examples and the integrations (their node_modules and build output skipped).
const DIRS = ['src', '__test__', 'bench', 'scripts', 'fuzz/src', 'fuzz/fuzz_targets', 'examples', 'integrations']
const files = [...DIRS.flatMap(sourceFiles), 'index.d.ts']
for (const file of files) {
  const text = readFileSync(join(root, file), 'utf8')
  for (const block of commentBlocks(text)) {
    let cited = null
    for (const { line, text: comment } of block) {
      for (const m of comment.matchAll(TOKEN)) {
        if (m[1]) {
          cited = m[1]
          continue
        }
        const ids = [m[2], m[3]].filter(Boolean).map((id) => id.replace(/\.$/, ''))
        for (const id of ids) {
          count++
          if (cited && !(cited in sections)) {
            failures.push(`${file}:${line}: cites ${cited} §${id}; only CONTRACT.md and API.md are in docs/`)
            continue
          }
          const where = cited ? [cited] : ['CONTRACT.md', 'API.md']
          if (!where.some((page) => sections[page].has(id))) {
            failures.push(`${file}:${line}: ${where.join(' or ')} §${id} has no heading in docs/`)
          }
        }
      }
    }
  }
}

for (const failure of failures) console.error(failure)
;(failures.length ? console.error : console.log)(
  `check-citations: ${count} section citations in ${files.length} files, ` +
    `${failures.length} unresolved (headings: docs/CONTRACT.md ${sections['CONTRACT.md'].size}, ` +
    `docs/API.md ${sections['API.md'].size})`,
)
if (failures.length) process.exit(1)
