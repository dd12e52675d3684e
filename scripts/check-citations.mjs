// Checks that every contract citation in the code resolves: each `CONTRACT.md §X` and
// `API.md §X` in a comment of src/, lib/ and index.d.ts (and of the tests, benchmarks, scripts, fuzz
// harness, examples and integrations, and in the README, ARCHITECTURE.md and docs/*.md) must name
// a numbered heading of docs/CONTRACT.md or docs/API.md. Run by `npm test` (`npm run check`).
//
// How a citation is read: the comment lines that follow each other form one comment; a file
// name (`CONTRACT.md`, `API.md`) in it applies to every `§X` after it in that comment, up to the
// next file name ("CONTRACT.md §1.5, §2.11; vectors §3.1–3.6" cites four sections of CONTRACT.md,
// both ends of a range included). A `§X` with no file name before it in its comment is a short
// citation: `§6.x` cites API.md (its additions, which CONTRACT.md has no sections for), any other
// `§X` CONTRACT.md. `§2.15 item 12` resolves to the heading
// `2.15`; items and steps are not checked. A section cited after the name of any other `*.md`
// file fails too: only these two pages of the contract are in the repository.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The numbered headings of a Markdown page: `## 2.15 …` gives `2.15`. */
function numberedHeadings(file) {
  const found = new Set()
  for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
    const m = /^#{1,6}\s+§?(\d+(?:\.\d+)*)\.?\s/.exec(line)
    if (m) found.add(m[1])
  }
  return found
}

function headings(file) {
  const found = numberedHeadings(file)
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

/** The paragraphs of a Markdown page (each table row on its own), each line with its number. */
function paragraphs(text) {
  const blocks = []
  let block = null
  text.split('\n').forEach((line, i) => {
    if (!line.trim() || line.trimStart().startsWith('|')) block = null
    if (!line.trim()) return
    if (!block) {
      block = []
      blocks.push(block)
    }
    block.push({ line: i + 1, text: line })
    if (line.trimStart().startsWith('|')) block = null
  })
  return blocks
}

/** What may stand between the sections of one citation run in a page. */
const RUN_GAP = /^(?:[\s,;/]|and|or|items?|steps?|layers?|vectors|\d+|"[^"\n]*"|`[^`\n]*`|\([^()\n]*\))*$/

const TOKEN = /(?<![\w.-])([A-Z][A-Za-z_]*\.md)\b|§\s?(\d+(?:\.\d+)*)(?:\s?[–-]\s?§?(\d+(?:\.\d+)*))?/g

const failures = []
let count = 0
// Where comments are read: the crate, the JavaScript layer, the tests, the benchmarks, the scripts,
// the fuzz harness, the examples and the integrations (their node_modules and build output skipped).
const DIRS = ['src', 'lib', '__test__', 'bench', 'scripts', 'fuzz/src', 'fuzz/fuzz_targets', 'examples', 'integrations']
// The pages: a bare `§X` in one of them cites that page's own numbered headings (or, in a page
// without any, CONTRACT.md or API.md).
const PAGES = ['README.md', 'ARCHITECTURE.md', ...readdirSync(join(root, 'docs')).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`)]
const files = [...DIRS.flatMap(sourceFiles), 'index.d.ts', ...PAGES]
for (const file of files) {
  const text = readFileSync(join(root, file), 'utf8')
  const page = file.endsWith('.md')
  const own = page ? numberedHeadings(file) : new Set()
  for (const block of page ? paragraphs(text) : commentBlocks(text)) {
    // In a page a file name holds only over the run of sections right after it
    // ("CONTRACT.md §1.1 and §1.2", "§4 items 17 and 18"); prose after that is the page's own.
    const joined = block.map((l) => l.text).join('\n')
    const starts = []
    let offset = 0
    for (const l of block) {
      starts.push(offset)
      offset += l.text.length + 1
    }
    const lineAt = (index) => block[starts.findLastIndex((start) => start <= index)].line
    let cited = null
    let lastEnd = 0
    for (const m of joined.matchAll(TOKEN)) {
      const gap = joined.slice(lastEnd, m.index)
      lastEnd = m.index + m[0].length
      if (m[1]) {
        cited = m[1]
        continue
      }
      if (page && cited && !RUN_GAP.test(gap)) cited = null
      const line = lineAt(m.index)
      const ids = [m[2], m[3]].filter(Boolean).map((id) => id.replace(/\.$/, ''))
      for (const id of ids) {
        count++
        if (cited && !(cited in sections)) {
          failures.push(`${file}:${line}: cites ${cited} §${id}; only CONTRACT.md and API.md are in docs/`)
          continue
        }
        if (!cited && own.size) {
          if (!own.has(id)) failures.push(`${file}:${line}: §${id} has no heading in this page`)
          continue
        }
        // A bare section: API.md's for 6.x (what taskstream adds; CONTRACT.md has no 6.x), else
        // CONTRACT.md's. The head of each page says so.
        const where = cited ? [cited] : [/^6\./.test(id) ? 'API.md' : 'CONTRACT.md']
        if (!where.some((name) => sections[name].has(id))) {
          failures.push(`${file}:${line}: ${where.join(' or ')} §${id} has no heading in docs/`)
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
