// Runs before `npm run build` / `npm run build:debug` (`prebuild`, `prebuild:debug`):
// `node scripts/typedefs-guard.mjs release|debug`.
//
// `napi build` writes index.d.ts from the type definitions napi-derive leaves in
// target/napi-rs/ while it compiles the binding. When it finds none cached, it sets
// NAPI_FORCE_BUILD_TASKSTREAM so that cargo compiles the binding again; .cargo/config.toml fixes
// that variable's value instead (set on a fresh checkout's first build only, it made every second
// build compile the binding once more: docs/development.md, "npm test"). So were target/napi-rs/
// deleted while the binding stays compiled, cargo would compile nothing and index.d.ts would
// come out empty. This guard sees that case (a compiled binding in the profile's directory, no
// type definitions at all) and drops the binding's fingerprints, so that cargo compiles it,
// and napi-derive writes them, again.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'

const CRATE = 'taskstream'
const profile = process.argv[2]
if (profile !== 'release' && profile !== 'debug') {
  console.error('usage: node scripts/typedefs-guard.mjs release|debug')
  process.exit(2)
}

const metadata = JSON.parse(
  execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps', '--offline'], { encoding: 'utf8', timeout: 60_000 }),
)
const target = metadata.target_directory
const list = (dir) => (existsSync(dir) ? readdirSync(dir) : [])

const cached = list(join(target, 'napi-rs')).some((dir) => existsSync(join(target, 'napi-rs', dir, CRATE)))
const fingerprints = join(target, profile, '.fingerprint')
// `taskstream-<hash>` (the library and its build script), not `taskstream-core-…`/`taskstream-keeper-…`.
const fingerprint = new RegExp(`^${CRATE}-[0-9a-f]{16}$`)
const compiled = list(fingerprints).filter((name) => fingerprint.test(name))
if (!cached && compiled.length > 0) {
  for (const name of compiled) rmSync(join(fingerprints, name), { recursive: true, force: true })
  console.log(`typedefs-guard: no type definitions in ${join(target, 'napi-rs')}: the binding is compiled again`)
}
