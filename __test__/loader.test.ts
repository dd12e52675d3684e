// The generated loader (index.js) after scripts/patch-loader.mjs: when no binding loads, the error
// names the platform package this machine needs; when one loads, nothing changed (CommonJS and
// ESM named imports). Every case runs the loader in a child Node, from a temporary directory that
// holds a copy of it and, depending on the case, no binary, a broken package or a working one.
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(__dirname, '..')
const patchScript = join(root, 'scripts', 'patch-loader.mjs')
const hostTarget = `${process.platform}-${process.arch}${process.platform === 'linux' ? '-gnu' : ''}`
const prebuilt = [
  'taskstream-linux-x64-gnu',
  'taskstream-linux-arm64-gnu',
  'taskstream-linux-x64-musl',
  'taskstream-darwin-x64',
  'taskstream-darwin-arm64',
  'taskstream-win32-x64-msvc',
]

let dir: string
const dirs: string[] = []

/** A fresh directory with a patched copy of the repository's loader, and nothing else. */
function loaderDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'taskstream-loader-'))
  dirs.push(d)
  copyFileSync(join(root, 'index.js'), join(d, 'index.js'))
  mkdirSync(join(d, 'lib'))
  for (const file of ['side.js', 'surface.js']) copyFileSync(join(root, 'lib', file), join(d, 'lib', file))
  writeFileSync(join(d, 'package.json'), JSON.stringify({ name: 'taskstream', version: '0.1.0', main: 'index.js' }))
  execFileSync(process.execPath, [patchScript, join(d, 'index.js')], { cwd: root, stdio: 'pipe' })
  return d
}

interface LoadOutcome {
  ok: boolean
  message?: string
  code?: string
  packageName?: string
  causes?: string[]
  keys?: string[]
}

/** Requires the loader in `cwd` in a child Node, optionally faking `process.platform`/`arch`. */
function load(cwd: string, fake: { platform?: string; arch?: string } = {}, env: Record<string, string> = {}): LoadOutcome {
  const preload = join(cwd, 'fake-platform.cjs')
  writeFileSync(
    preload,
    [
      fake.platform ? `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(fake.platform)} })` : '',
      fake.arch ? `Object.defineProperty(process, 'arch', { value: ${JSON.stringify(fake.arch)} })` : '',
    ].join('\n'),
  )
  const script = `
    let out
    try {
      const b = require('./index.js')
      out = { ok: true, keys: Object.keys(b).sort() }
    } catch (e) {
      const causes = []
      for (let c = e.cause; c; c = c.cause) causes.push(c.message)
      out = { ok: false, message: e.message, code: e.code, packageName: e.packageName, causes }
    }
    process.stdout.write(JSON.stringify(out))
  `
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env }
  delete childEnv.NODE_PATH
  if (!('NAPI_RS_NATIVE_LIBRARY_PATH' in env)) delete childEnv.NAPI_RS_NATIVE_LIBRARY_PATH
  delete childEnv.NAPI_RS_FORCE_WASI
  const r = spawnSync(process.execPath, ['-r', preload, '-e', script], { cwd, env: childEnv, encoding: 'utf8' })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as LoadOutcome
}

beforeAll(() => {
  dir = loaderDir()
})

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('patch-loader', () => {
  it('is idempotent and only inserts one block in front of the load-failure check and one at the end', () => {
    const once = readFileSync(join(dir, 'index.js'), 'utf8')
    execFileSync(process.execPath, [patchScript, join(dir, 'index.js')], { cwd: root, stdio: 'pipe' })
    expect(readFileSync(join(dir, 'index.js'), 'utf8')).toBe(once)
    const begin = once.indexOf('// taskstream:loader-error begin')
    const end = once.indexOf('// taskstream:loader-error end')
    expect(begin).toBeGreaterThan(0)
    expect(once.indexOf('// taskstream:loader-error begin', begin + 1)).toBe(-1)
    const tail = once.indexOf('// taskstream:exports begin')
    expect(tail).toBeGreaterThan(end)
    expect(once.indexOf('// taskstream:exports begin', tail + 1)).toBe(-1)
    // The tail block is the file's end: the JavaScript layer's exports, and RECOMMENDED_SIGNAL,
    // frozen, each with its own export line.
    expect(once.slice(tail).split('\n').slice(1)).toEqual([
      "const __tsSurface = require('./lib/surface.js')(nativeBinding)",
      'module.exports.executeBackground = __tsSurface.executeBackground',
      'module.exports.getDefaultBackgroundShellRegistry = __tsSurface.getDefaultBackgroundShellRegistry',
      'module.exports.MonitorStatus = __tsSurface.MonitorStatus',
      'module.exports.BackgroundShellStatus = __tsSurface.BackgroundShellStatus',
      'module.exports.WaitReason = __tsSurface.WaitReason',
      'module.exports.RECOMMENDED_SIGNAL = Object.freeze(nativeBinding.recommendedSignal())',
      '// taskstream:exports end',
      '',
    ])
    // Outside the blocks the file is the generated loader: the root file, with or without them.
    const generated = once.slice(0, begin) + once.slice(end + '// taskstream:loader-error end\n'.length, tail)
    const rootLoader = readFileSync(join(root, 'index.js'), 'utf8')
    expect([generated, once]).toContain(rootLoader)
    expect(once.slice(end)).toMatch(/^\/\/ taskstream:loader-error end\nif \(!nativeBinding\) \{\n {2}if \(loadErrors\.length > 0\) \{\n/)
    // The generated tail that Node's CommonJS export detection reads is untouched.
    expect(generated.trimEnd().split('\n').at(-1)).toMatch(/^module\.exports\.\w+ = nativeBinding\.\w+$/)
  })

  it('--check fails on an unpatched loader and passes on a patched one', () => {
    const d = mkdtempSync(join(tmpdir(), 'taskstream-loader-'))
    dirs.push(d)
    const generated = readFileSync(join(dir, 'index.js'), 'utf8').replace(
      /\/\/ taskstream:loader-error begin[\s\S]*?\/\/ taskstream:loader-error end\n/,
      '',
    )
    writeFileSync(join(d, 'index.js'), generated)
    const check = () => spawnSync(process.execPath, [patchScript, '--check', join(d, 'index.js')], { cwd: root, encoding: 'utf8' })
    expect(check().status).toBe(1)
    execFileSync(process.execPath, [patchScript, join(d, 'index.js')], { cwd: root, stdio: 'pipe' })
    expect(check().status).toBe(0)
  })
})

describe('the load error names the missing platform package', () => {
  it.runIf(process.platform === 'linux' && process.arch === 'x64')('on this machine: taskstream-linux-x64-gnu, not installed', () => {
    const r = load(dir)
    expect(r.ok).toBe(false)
    expect(r.code).toBe('ERR_TASKSTREAM_NATIVE_BINDING')
    expect(r.packageName).toBe('taskstream-linux-x64-gnu')
    expect(r.message).toBe(
      'Cannot find native binding for taskstream on linux-x64-gnu. The platform package `taskstream-linux-x64-gnu` is not installed. ' +
        'npm installs it as an optional dependency of taskstream unless optional dependencies are omitted (--omit=optional, --no-optional) ' +
        'or hit the npm bug https://github.com/npm/cli/issues/4828 (remove node_modules and package-lock.json, then npm install again). ' +
        'It can also be installed directly: npm install taskstream-linux-x64-gnu@0.1.0. The load errors are in error.cause.',
    )
    // The generated load errors stay available, newest first.
    expect(r.causes?.join('\n')).toContain("Cannot find module 'taskstream-linux-x64-gnu'")
    expect(r.causes?.join('\n')).toContain("Cannot find module './taskstream.linux-x64-gnu.node'")
  })

  it.each([
    ['darwin', 'arm64', 'taskstream-darwin-arm64'],
    ['darwin', 'x64', 'taskstream-darwin-x64'],
    ['win32', 'x64', 'taskstream-win32-x64-msvc'],
    ['linux', 'arm64', process.platform === 'linux' && hostTarget.endsWith('-gnu') ? 'taskstream-linux-arm64-gnu' : null],
  ])('with process.platform %s and process.arch %s: %s', (platform, arch, pkg) => {
    if (pkg === null) return // the libc of a faked linux follows the host's
    const r = load(dir, { platform, arch })
    expect(r.ok).toBe(false)
    expect(r.packageName).toBe(pkg)
    expect(r.message).toMatch(new RegExp(`^Cannot find native binding for taskstream on ${pkg.slice('taskstream-'.length)}\\. `))
    expect(r.message).toContain(`The platform package \`${pkg}\` is not installed.`)
    expect(r.message).toContain(`npm install ${pkg}@0.1.0`)
  })

  it('on a platform without a prebuilt package: names the package that does not exist and lists the real ones', () => {
    const r = load(dir, { platform: 'freebsd', arch: 'x64' })
    expect(r.ok).toBe(false)
    expect(r.packageName).toBe('taskstream-freebsd-x64')
    expect(r.message).toBe(
      'Cannot find native binding for taskstream on freebsd-x64. There is no package `taskstream-freebsd-x64`: taskstream has no ' +
        `prebuilt binary for freebsd-x64. Prebuilt packages: ${prebuilt.join(', ')}. The load errors are in error.cause.`,
    )
  })

  it.runIf(process.platform === 'linux' && process.arch === 'x64')('when the package is installed but its binary is broken', () => {
    const d = loaderDir()
    const pkgDir = join(d, 'node_modules', 'taskstream-linux-x64-gnu')
    mkdirSync(pkgDir, { recursive: true })
    writeFileSync(join(pkgDir, 'package.json'), JSON.stringify({ name: 'taskstream-linux-x64-gnu', version: '0.1.0', main: 'taskstream.linux-x64-gnu.node' }))
    writeFileSync(join(pkgDir, 'taskstream.linux-x64-gnu.node'), 'not an ELF file')
    const r = load(d)
    expect(r.ok).toBe(false)
    expect(r.packageName).toBe('taskstream-linux-x64-gnu')
    expect(r.message).toMatch(
      new RegExp(
        `^Cannot find native binding for taskstream on linux-x64-gnu\\. The platform package \`taskstream-linux-x64-gnu\` is installed \\(${pkgDir}\\) but could not be loaded: ${pkgDir}/taskstream\\.linux-x64-gnu\\.node: .+; reinstall it \\(version 0\\.1\\.0\\)\\. The load errors are in error\\.cause\\.$`,
      ),
    )
  })

  it('when NAPI_RS_NATIVE_LIBRARY_PATH points at nothing', () => {
    const r = load(dir, {}, { NAPI_RS_NATIVE_LIBRARY_PATH: join(dir, 'missing.node') })
    expect(r.ok).toBe(false)
    expect(r.message).toContain(`NAPI_RS_NATIVE_LIBRARY_PATH is set (${join(dir, 'missing.node')}) and that file could not be loaded.`)
  })
})

describe('when the platform package is there, the patched loader loads it', () => {
  it.runIf(process.platform === 'linux' && process.arch === 'x64')('through node_modules, for require and for ESM named imports', () => {
    const d = loaderDir()
    const pkgDir = join(d, 'node_modules', 'taskstream-linux-x64-gnu')
    mkdirSync(pkgDir, { recursive: true })
    writeFileSync(join(pkgDir, 'package.json'), JSON.stringify({ name: 'taskstream-linux-x64-gnu', version: '0.1.0', main: 'taskstream.linux-x64-gnu.node' }))
    symlinkSync(join(root, 'taskstream.linux-x64-gnu.node'), join(pkgDir, 'taskstream.linux-x64-gnu.node'))
    const r = load(d)
    expect(r.ok).toBe(true)
    expect(r.keys).toContain('MonitorRegistry')

    // Every value the typings declare is a named ESM export of the CommonJS loader.
    const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')
    const values = [...dts.matchAll(/^export declare (?:function|class|const) (\w+)/gm)].map((m) => m[1])
    expect(values.length).toBeGreaterThan(20)
    const esm = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { ${values.join(', ')} } from ${JSON.stringify(join(d, 'index.js'))}
         const missing = Object.entries({ ${values.join(', ')} }).filter(([k, v]) => v === undefined && k !== '__napiBindingTarget').map(([k]) => k)
         process.stdout.write(JSON.stringify({ missing, target: __napiBindingTarget }))`,
      ],
      { cwd: d, encoding: 'utf8' },
    )
    expect(esm.status, esm.stderr).toBe(0)
    expect(JSON.parse(esm.stdout)).toEqual({ missing: [], target: 'native' })
  })
})
