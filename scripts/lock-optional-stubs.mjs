// Adds lock entries for optional platform packages that `npm install` left out of
// package-lock.json (the registry mirror on our build machines lacks some foreign-platform
// builds, so npm skips them and then `npm ci` refuses the lock as "out of sync").
// Each stub pins the version the parent asks for and is marked optional, which is exactly
// what npm writes on a machine that could see the package. Run after `npm install`:
//   node scripts/lock-optional-stubs.mjs [path/to/package-lock.json]   (default: the root's)
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'

const lockPath = process.argv[2] ? resolve(process.argv[2]) : new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(lockPath, 'utf8'))
let added = 0
for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [name, spec] of Object.entries(pkg.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ''}node_modules/${name}`
    const hoisted = `node_modules/${name}`
    if (lock.packages[nested] || lock.packages[hoisted]) continue
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec)) continue // only exact pins can be stubbed
    lock.packages[hoisted] = { version: spec, optional: true }
    added++
  }
}
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`lock-optional-stubs: added ${added} optional entries`)
