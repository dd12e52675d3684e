// Directory containment for the shell tool's `directory` parameter (CONTRACT.md §2.16 step 5,
// with the segment-aware rule of §2.11): resolve lexically, canonicalise the longest existing
// prefix with realpath, then compare whole path segments.
import { realpathSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'

export function canonicalPath(path: string): string {
  const lexical = resolve(path)
  const rest: string[] = []
  for (let current = lexical; ; ) {
    try {
      return join(realpathSync(current), ...rest.reverse())
    } catch {
      const parent = dirname(current)
      if (parent === current) return lexical
      rest.push(current.slice(parent.length).replace(/^[\\/]+/, ''))
      current = parent
    }
  }
}

/** True when `dir` equals one of `roots` or lies below one, segment by segment. */
export function isWithinAny(dir: string, roots: readonly string[]): boolean {
  const target = canonicalPath(dir)
  return roots.some((root) => {
    const rel = relative(canonicalPath(root), target)
    return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
  })
}
