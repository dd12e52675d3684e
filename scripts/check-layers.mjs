// Checks the floors of the core that ARCHITECTURE.md draws: `npm test` runs it (`npm run check`).
//
// It reads the floor table of ARCHITECTURE.md ("The floors of the core": one row per unit, its
// floor number and its files or folders in backticks), then every non-test source file under
// src/core, and collects the modules each file uses: `use crate::…`, `use super::…`,
// `use self::…`, `use <child module>::…`, and the same paths written inline in code
// (`crate::core::text::strip_ansi(…)`). Each path is resolved to the file that defines the item,
// following `pub use` re-exports, `mod` declarations and `#[path]` attributes. It fails when
//   - a file uses a unit on its own floor or a floor above it (a unit may use its own files and
//     the floors below it), or anything outside src/core;
//   - files use each other directly or in a cycle (each cycle is named with the lines that close it);
//   - a file under src/core is in no unit of the table;
// unless the finding is one of the EXCEPTIONS below, which are printed on every run. An exception
// that no longer matches anything fails too, so the list stays exact.
//
// Not counted: test code (files mounted under `#[cfg(test)]`, `#[cfg(test)]` items), comments and
// strings, a module's `pub use` of its own submodules (that is its surface, not a use), and
// paths to other crates.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const CORE = 'src/core'

// Known findings, kept visible: each is printed on every run until the code is changed and the
// entry removed. `from`/`to` are paths under src/core (a folder ends with `/`); a cycle lists its
// files in any order.
const EXCEPTIONS = [
  // None today. An entry looks like
  //   { from: 'process/', to: 'terminal/', why: 'what still points the wrong way, and how to cut it' }
  // or, for a cycle, { cycle: ['a.rs', 'b.rs'], why: '…' }.
]

// ---------------------------------------------------------------------------------------------
// The floor table

function floorTable(heading) {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8')
  const start = text.indexOf(heading)
  if (start < 0) throw new Error(`ARCHITECTURE.md has no "${heading}" section`)
  const section = text.slice(start).split(/\n## /)[0]
  const units = []
  for (const line of section.split('\n')) {
    const m = /^\|\s*(\d+)\s*\|([^|]*)\|/.exec(line)
    if (!m) continue
    const paths = [...m[2].matchAll(/`([^`]+)`/g)].map((p) => p[1])
    if (paths.length) units.push({ floor: Number(m[1]), name: paths.join(' '), paths })
  }
  if (units.length === 0) throw new Error('ARCHITECTURE.md: the floor table has no rows')
  return units
}

// The two scopes checked, each against its own floor table: the core may use nothing outside it;
// the binding may use the core (every floor of the binding stands on the whole core).
const SCOPES = [
  { dir: CORE, name: 'src/core', heading: '## The floors of the core', outside: () => false },
  { dir: 'src/binding', name: 'src/binding', heading: '## The floors of the binding', outside: (target) => target.startsWith(`${CORE}/`) },
].map((scope) => ({ ...scope, units: floorTable(scope.heading) }))

function unitOf(scope, file) {
  if (!file.startsWith(`${scope.dir}/`)) return null
  const rel = relative(scope.dir, file)
  for (const unit of scope.units) {
    for (const p of unit.paths) {
      if (p.endsWith('/') ? rel.startsWith(p) : rel === p) return unit
    }
  }
  return null
}

// ---------------------------------------------------------------------------------------------
// Reading Rust: comments and strings blanked (lines kept), test items blanked

function blankCommentsAndStrings(src) {
  let out = ''
  let i = 0
  const keepNewlines = (s) => s.replace(/[^\n]/g, ' ')
  while (i < src.length) {
    const c = src[i]
    const next = src[i + 1]
    if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i)
      const stop = end < 0 ? src.length : end
      out += keepNewlines(src.slice(i, stop))
      i = stop
    } else if (c === '/' && next === '*') {
      let depth = 1
      let j = i + 2
      while (j < src.length && depth > 0) {
        if (src[j] === '/' && src[j + 1] === '*') (depth++, (j += 2))
        else if (src[j] === '*' && src[j + 1] === '/') (depth--, (j += 2))
        else j++
      }
      out += keepNewlines(src.slice(i, j))
      i = j
    } else if ((c === 'r' || c === 'b') && /^(br|r)#*"/.test(src.slice(i, i + 40)) && !/\w/.test(src[i - 1] ?? '')) {
      const m = /^(br|r)(#*)"/.exec(src.slice(i))
      const close = '"' + m[2]
      const end = src.indexOf(close, i + m[0].length)
      const stop = end < 0 ? src.length : end + close.length
      out += keepNewlines(src.slice(i, stop))
      i = stop
    } else if (c === '"') {
      let j = i + 1
      while (j < src.length && src[j] !== '"') j += src[j] === '\\' ? 2 : 1
      out += keepNewlines(src.slice(i, j + 1))
      i = j + 1
    } else if (c === "'") {
      // A char literal ('x', '\n', '\u{1F600}'), not a lifetime ('a).
      const m = /^'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'/u.exec(src.slice(i))
      if (m) {
        out += keepNewlines(m[0])
        i += m[0].length
      } else {
        out += c
        i++
      }
    } else {
      out += c
      i++
    }
  }
  return out
}

function matchingBrace(src, open) {
  let depth = 0
  for (let j = open; j < src.length; j++) {
    if (src[j] === '{') depth++
    else if (src[j] === '}' && --depth === 0) return j
  }
  return src.length - 1
}

const TEST_CFG = /#\[cfg\(([^\]]*)\)\]/g
/** Whether a `cfg` condition holds only in tests: `test`, or `all(…)` with `test` among its terms
 * (`any(target_os = "macos", test)` is not: it holds on macOS without tests). */
function isTestCfg(cond) {
  const c = cond.replace(/\s+/g, '')
  if (c === 'test') return true
  if (!c.startsWith('all(') || !c.endsWith(')')) return false
  let depth = 0
  let term = ''
  for (const ch of c.slice(4, -1) + ',') {
    if (ch === '(') depth++
    if (ch === ')') depth--
    if (ch === ',' && depth === 0) {
      if (term === 'test') return true
      term = ''
    } else term += ch
  }
  return false
}

/** Blanks every item under a `#[cfg(test)]`-like attribute; returns the names of test modules. */
function blankTestItems(src) {
  const testMods = new Set()
  let out = src
  for (const m of src.matchAll(TEST_CFG)) {
    if (!isTestCfg(m[1])) continue
    const from = m.index
    const rest = out.slice(from + m[0].length)
    const semi = rest.indexOf(';')
    const brace = rest.indexOf('{')
    const modName = /^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)/.exec(rest)
    let end
    if (semi >= 0 && (brace < 0 || semi < brace)) end = from + m[0].length + semi + 1
    else end = matchingBrace(out, from + m[0].length + brace) + 1
    if (modName) testMods.add(modName[1])
    out = out.slice(0, from) + out.slice(from, end).replace(/[^\n]/g, ' ') + out.slice(end)
  }
  return { code: out, testMods }
}

const lineOf = (src, index) => src.slice(0, index).split('\n').length

// ---------------------------------------------------------------------------------------------
// The module tree, from src/lib.rs

const modules = new Map() // module path ("crate::core::text") -> { file, files, children, inline, test }
const fileInfo = new Map() // file -> { module, code, test, inlineMods: [{name, start, end}] }

function loadFile(file, modulePath, test) {
  if (fileInfo.has(file)) {
    // The same file mounted a second time (`#[path]`) is the same module.
    modules.set(modulePath, modules.get(fileInfo.get(file).module))
    return
  }
  const raw = readFileSync(join(root, file), 'utf8')
  const stripped = blankCommentsAndStrings(raw)
  const { code, testMods } = blankTestItems(stripped)
  const info = { module: modulePath, stripped, code, test, inlineMods: [] }
  fileInfo.set(file, info)
  // A module mounted from different files under different `cfg`s (a `#[path]` remount) is one
  // module with several files: a use of it is a use of each.
  const existing = modules.get(modulePath)
  const node = existing ?? { file, files: [], children: new Map(), test }
  node.files.push(file)
  modules.set(modulePath, node)
  const isModRs = /(^|\/)(mod|lib)\.rs$/.test(file)
  const dir = isModRs ? dirname(file) : join(dirname(file), file.replace(/^.*\//, '').replace(/\.rs$/, ''))
  // Inline modules (`mod unix { … }`) belong to this file.
  for (const m of stripped.matchAll(/(?:^|[;{}\s])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{/g)) {
    const open = m.index + m[0].length - 1
    info.inlineMods.push({ name: m[1], start: open, end: matchingBrace(stripped, open) })
    node.children.set(m[1], `${modulePath}::${m[1]}`)
    modules.set(`${modulePath}::${m[1]}`, { file, files: [file], children: new Map(), test, inline: true })
  }
  for (const m of stripped.matchAll(/((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g)) {
    const attrs = m[1]
    const name = m[2]
    const pathAttr = /#\[path\s*=\s*"([^"]+)"\]/.exec(raw.slice(m.index, m.index + m[0].length))
    let child
    if (pathAttr) child = join(isModRs ? dirname(file) : dirname(file), pathAttr[1])
    else if (existsSync(join(root, dir, `${name}.rs`))) child = join(dir, `${name}.rs`)
    else child = join(dir, name, 'mod.rs')
    const childTest = test || testMods.has(name) || [...attrs.matchAll(TEST_CFG)].some((a) => isTestCfg(a[1]))
    // A second mount of a file (a `#[path]` remount) keeps the first one's module.
    const childPath = `${modulePath}::${name}`
    node.children.set(name, childPath)
    if (existsSync(join(root, child))) loadFile(child, childPath, childTest)
  }
}

loadFile('src/lib.rs', 'crate', false)
// The core is a crate of its own (src/core/lib.rs, `taskstream-core`) which the binding names
// `crate::core`: its modules are mounted there, and a `crate::` path inside it means the core.
loadFile(`${CORE}/lib.rs`, 'crate::core', false)
const CORE_MODULE = 'crate::core'
modules.get('crate').children.set('core', CORE_MODULE)

// ---------------------------------------------------------------------------------------------
// Use trees and paths

/** Expands a use tree (`a::{b, c::{d as e, self}}`) into full paths (arrays of segments). */
function expandUseTree(tree) {
  tree = tree.replace(/\s+/g, '')
  const out = []
  function walk(prefix, s) {
    const brace = s.indexOf('{')
    if (brace < 0) {
      const path = s.replace(/as\w+$/, '').replace(/(?<=\w)as\w+$/, '')
      const segs = [...prefix, ...path.split('::').filter(Boolean)]
      if (segs.at(-1) === 'self') segs.pop()
      out.push(segs)
      return
    }
    const head = s.slice(0, brace).split('::').filter(Boolean)
    const inner = s.slice(brace + 1, s.lastIndexOf('}'))
    let depth = 0
    let startAt = 0
    const parts = []
    for (let i = 0; i <= inner.length; i++) {
      const c = inner[i]
      if (c === '{') depth++
      else if (c === '}') depth--
      else if ((c === ',' && depth === 0) || i === inner.length) {
        if (inner.slice(startAt, i)) parts.push(inner.slice(startAt, i))
        startAt = i + 1
      }
    }
    for (const part of parts) walk([...prefix, ...head], part)
  }
  walk([], tree)
  return out
}

function parentOf(path) {
  return path.includes('::') ? path.slice(0, path.lastIndexOf('::')) : null
}

/** The names a module imports: name -> { segs, context }, from its `use` lines (any visibility:
 * a child module may reach a private `use` of its parent through `super::`). */
const reexportCache = new Map()
function reexports(modulePath) {
  if (reexportCache.has(modulePath)) return reexportCache.get(modulePath)
  const map = new Map()
  reexportCache.set(modulePath, map)
  const node = modules.get(modulePath)
  if (!node || node.inline) return map
  for (const file of node.files) for (const m of fileInfo.get(file).code.matchAll(/(?<![\w:])(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);/g)) {
    const context = contextAt(file, m.index)
    if (context !== modulePath) continue
    const tree = m[1].replace(/\s+/g, ' ')
    for (const segs of expandUseTree(tree)) {
      const alias = /\bas\s+(\w+)/.exec(tree.slice(tree.lastIndexOf(segs.at(-1))))
      const name = alias && tree.includes(`${segs.at(-1)} as ${alias[1]}`) ? alias[1] : segs.at(-1)
      if (name === '*') continue
      if (!map.has(name)) map.set(name, { segs, context })
    }
  }
  return map
}

/** The module a position of a file is in (inline modules included). */
function contextAt(file, index) {
  const info = fileInfo.get(file)
  let path = info.module
  const enclosing = info.inlineMods.filter((m) => m.start < index && index < m.end).sort((a, b) => a.start - b.start)
  for (const m of enclosing) path = `${path}::${m.name}`
  return path
}

/** Resolves a path used in `context` to the module path that defines it, or null (another crate). */
function resolve(segs, context, depth = 0, via = null) {
  if (depth > 20 || segs.length === 0) return null
  let [first, ...rest] = segs
  let current
  if (first === 'crate') current = context === CORE_MODULE || context.startsWith(`${CORE_MODULE}::`) ? CORE_MODULE : 'crate'
  else if (first === 'super') {
    current = parentOf(context)
    while (rest[0] === 'super') (current = parentOf(current)), rest.shift()
  } else if (first === 'self') current = context
  else if (modules.get(context)?.children.has(first)) current = modules.get(context).children.get(first)
  else return null
  if (!current || !modules.has(current)) return null
  for (let i = 0; i < rest.length; i++) {
    const seg = rest[i]
    const last = i === rest.length - 1
    const node = modules.get(current)
    const re = reexports(current).get(seg)
    if (seg === '*') return current
    if (re && via && re.context === current) via.add(current)
    if (last && re) return resolve(re.segs, re.context, depth + 1, via)
    if (node.children.has(seg) && modules.has(node.children.get(seg))) {
      current = node.children.get(seg)
      continue
    }
    if (re) {
      const target = resolve(re.segs, re.context, depth + 1, via)
      if (target && modules.has(target) && !last) {
        const rem = rest.slice(i + 1)
        return resolve(['crate', ...target.split('::').slice(1), ...rem], 'crate', depth + 1, via) ?? target
      }
      return target ?? current
    }
    return current // an item defined in `current`
  }
  return current
}

// ---------------------------------------------------------------------------------------------
// Edges

const scopeFiles = (scope) =>
  [...fileInfo.entries()]
    .filter(([file, info]) => file.startsWith(`${scope.dir}/`) && !info.test && file !== `${CORE}/lib.rs`)
    .map(([file]) => file)
    .sort()
const coreFiles = SCOPES.flatMap(scopeFiles)

const edges = new Map() // file -> Map(targetFile -> [line])

for (const file of coreFiles) {
  const info = fileInfo.get(file)
  const code = info.code
  const found = new Map()
  const add = (target, index) => {
    if (!target || target === file) return
    if (!found.has(target)) found.set(target, [])
    found.get(target).push(lineOf(code, index))
  }
  const useSpans = []
  for (const m of code.matchAll(/(?<![\w:])(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);/g)) {
    useSpans.push([m.index, m.index + m[0].length])
    const context = contextAt(file, m.index)
    for (const segs of expandUseTree(m[2])) {
      const via = new Set()
      const target = resolve(segs, context, 0, via)
      if (!target) continue
      // A module's `pub use` of its own submodules is its surface, not a use.
      if (m[1] && (target === context || target.startsWith(`${context}::`))) continue
      for (const f of modules.get(target)?.files ?? []) add(f, m.index)
      // A path through a re-export uses the module that re-exports too: a re-export hides no cycle.
      for (const module of via) if (module !== context) for (const f of modules.get(module)?.files ?? []) add(f, m.index)
    }
  }
  const inUse = (i) => useSpans.some(([a, b]) => a <= i && i < b)
  for (const m of code.matchAll(/(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:::[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
    if (inUse(m.index)) continue
    const segs = m[1].split('::')
    const context = contextAt(file, m.index)
    if (!['crate', 'super', 'self'].includes(segs[0]) && !modules.get(context)?.children.has(segs[0])) continue
    const via = new Set()
    const target = resolve(segs, context, 0, via)
    if (target) for (const f of modules.get(target)?.files ?? []) add(f, m.index)
    for (const module of via) if (module !== context) for (const f of modules.get(module)?.files ?? []) add(f, m.index)
  }
  edges.set(file, found)
}

// ---------------------------------------------------------------------------------------------
// Findings

const scopeOf = (file) => SCOPES.find((scope) => file.startsWith(`${scope.dir}/`))
const short = (file) => (file.startsWith(`${CORE}/`) ? relative(CORE, file) : file)
const findings = []
for (const file of coreFiles) {
  const scope = scopeOf(file)
  if (!unitOf(scope, file)) findings.push({ kind: 'unmapped', text: `${file} is in no unit of the floor table of ${scope.name}` })
}

for (const [file, targets] of edges) {
  const scope = scopeOf(file)
  const from = unitOf(scope, file)
  if (!from) continue
  for (const [target, lines] of targets) {
    if (scope.outside(target)) continue
    const to = unitOf(scope, target)
    if (to === from) continue
    if (to && to.floor < from.floor) continue
    const where = to ? `floor ${to.floor} (${to.name})` : `outside ${scope.name}`
    findings.push({
      kind: 'floor',
      from: short(file),
      to: short(target),
      text: `${file}:${lines[0]}: floor ${from.floor} (${from.name}) uses ${target}, ${where}`,
    })
  }
}

// Cycles: strongly connected components of the file graph (Tarjan).
{
  let index = 0
  const stack = []
  const state = new Map()
  const sccs = []
  const strong = (v) => {
    state.set(v, { index, low: index, on: true })
    index++
    stack.push(v)
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!edges.has(w)) continue
      if (!state.has(w)) {
        strong(w)
        state.get(v).low = Math.min(state.get(v).low, state.get(w).low)
      } else if (state.get(w).on) state.get(v).low = Math.min(state.get(v).low, state.get(w).index)
    }
    if (state.get(v).low === state.get(v).index) {
      const scc = []
      let w
      do {
        w = stack.pop()
        state.get(w).on = false
        scc.push(w)
      } while (w !== v)
      if (scc.length > 1) sccs.push(scc.sort())
    }
  }
  for (const v of edges.keys()) if (!state.has(v)) strong(v)
  for (const scc of sccs) {
    const inside = new Set(scc)
    const lines = []
    for (const v of scc) {
      for (const [w, at] of edges.get(v)) if (inside.has(w)) lines.push(`    ${v}:${at[0]} uses ${short(w)}`)
    }
    findings.push({
      kind: 'cycle',
      files: scc.map(short),
      text: `cycle: ${scc.map(short).join(' ↔ ')}\n${lines.join('\n')}`,
    })
  }
}

const matchesPath = (pattern, path) => (pattern.endsWith('/') ? path.startsWith(pattern) : path === pattern)
function exceptionFor(finding) {
  return EXCEPTIONS.find((e) => {
    if (finding.kind === 'floor' && e.from && e.to) return matchesPath(e.from, finding.from) && matchesPath(e.to, finding.to)
    if (finding.kind === 'cycle' && e.cycle) {
      return e.cycle.length === finding.files.length && e.cycle.every((f) => finding.files.includes(f))
    }
    return false
  })
}

const failures = []
const used = new Set()
for (const finding of findings) {
  const exception = exceptionFor(finding)
  if (exception) used.add(exception)
  else failures.push(finding.text)
}

const edgeCount = [...edges.values()].reduce((n, t) => n + t.size, 0)
console.log(
  `check-layers: ${SCOPES.map((scope) => `${scopeFiles(scope).length} files of ${scope.name} in ${scope.units.length} units`).join(', ')}; ${edgeCount} file-to-file uses`,
)
{
  console.log(`check-layers: ${EXCEPTIONS.length} known exceptions (ARCHITECTURE.md, "Known exceptions")${EXCEPTIONS.length ? ':' : ''}`)
  for (const e of EXCEPTIONS) {
    const what = e.cycle ? `cycle ${e.cycle.join(' ↔ ')}` : `${e.from} → ${e.to}`
    console.log(`  - ${what}: ${e.why}${used.has(e) ? '' : '  [STALE: matches nothing, remove it]'}`)
  }
}
for (const e of EXCEPTIONS) if (!used.has(e)) failures.push(`stale exception: ${e.cycle ? e.cycle.join(' ↔ ') : `${e.from} → ${e.to}`}`)
for (const failure of failures) console.error(failure)
if (process.env.CHECK_LAYERS_EDGES) {
  for (const [file, targets] of edges) for (const [t, at] of targets) console.log(`${short(file)} -> ${short(t)} :${at.join(',')}`)
}
if (failures.length) {
  console.error(`check-layers: ${failures.length} findings`)
  process.exit(1)
}
