// taskstream as this project installed it: from node_modules, through the main package's loader
// and the platform package, with require() and with ESM named imports; and the typings-check file
// covers every exported name.
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

import * as taskstream from 'taskstream'

import { exerciseEveryExport } from '../src/types-check.js'

const project = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '')
const modules = join(project, 'node_modules')
const require = createRequire(join(project, 'package.json'))
const target = `${process.platform}-${process.arch}${process.platform === 'linux' ? '-gnu' : ''}`
const platformPackage = `taskstream-${target}`
const binaryFile = `taskstream.${target}.node`
const dts = readFileSync(join(modules, 'taskstream', 'index.d.ts'), 'utf8')
const valueNames = [...dts.matchAll(/^export declare (?:function|class|const) (\w+)/gm)].map((m) => m[1]!)
const typeNames = [...dts.matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1]!)

function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const key of Object.keys(env)) if (key.startsWith('NAPI_RS_') || key === 'NODE_PATH') delete env[key]
  return env
}

function node(args: string[], cwd = project): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, args, { cwd, env: childEnv(), encoding: 'utf8' })
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  )
}

describe('the installed packages', () => {
  it('resolve inside this project: the loader from taskstream, the binary from the platform package', () => {
    expect(require.resolve('taskstream')).toBe(join(modules, 'taskstream', 'index.js'))
    expect(realpathSync(join(modules, 'taskstream'))).toBe(join(modules, 'taskstream')) // extracted, not linked
    const fromLoader = createRequire(join(modules, 'taskstream', 'index.js'))
    expect(fromLoader.resolve(platformPackage)).toBe(join(modules, platformPackage, binaryFile))
    expect(realpathSync(join(modules, platformPackage))).toBe(join(modules, platformPackage))
    // The main package ships no binary, and nothing is nested under it.
    const shipped = filesUnder(join(modules, 'taskstream')).map((f) => f.slice(join(modules, 'taskstream').length + 1)).sort()
    expect(shipped).toEqual(['README.md', 'index.d.ts', 'index.js', 'lib/side.js', 'lib/surface.js', 'package.json'])
    // The platform package: the binary and, beside it, the keeper of persisted tasks (executable).
    const keeperFile = process.platform === 'win32' ? 'taskstream-keeper.exe' : 'taskstream-keeper'
    expect(readdirSync(join(modules, platformPackage)).sort()).toEqual(['README.md', binaryFile, keeperFile, 'package.json'].sort())
    expect(statSync(join(modules, platformPackage, binaryFile)).size).toBeGreaterThan(100_000)
    if (process.platform !== 'win32') expect(statSync(join(modules, platformPackage, keeperFile)).mode & 0o111).not.toBe(0)
  })

  it('the platform package satisfies the main package\'s optional dependency, as from the registry', () => {
    const main = JSON.parse(readFileSync(join(modules, 'taskstream', 'package.json'), 'utf8')) as {
      version: string
      optionalDependencies: Record<string, string>
    }
    const platform = JSON.parse(readFileSync(join(modules, platformPackage, 'package.json'), 'utf8')) as { version: string }
    expect(main.optionalDependencies[platformPackage]).toBe(main.version)
    expect(platform.version).toBe(main.version)
    const ls = spawnSync('npm', ['ls', '--all', '--json', 'taskstream', platformPackage], { cwd: project, env: childEnv(), encoding: 'utf8' })
    const tree = JSON.parse(ls.stdout) as {
      problems?: string[]
      dependencies: Record<string, { version: string; dependencies?: Record<string, { version?: string; invalid?: string; missing?: boolean }> }>
    }
    expect(tree.problems ?? []).toEqual([])
    expect(tree.dependencies.taskstream?.version).toBe(main.version)
    expect(tree.dependencies[platformPackage]?.version).toBe(main.version)
    const edge = tree.dependencies.taskstream?.dependencies?.[platformPackage]
    if (edge) expect(edge).toMatchObject({ version: main.version }) // deduped onto the top-level package
    expect(edge?.invalid).toBeUndefined()
    expect(edge?.missing).toBeUndefined()
  })

  it('require() loads exactly that binary', () => {
    const r = node([
      '-e',
      `const ts = require('taskstream')
       const loaded = Object.keys(require.cache).filter((k) => k.endsWith('.node'))
       process.stdout.write(JSON.stringify({ loaded, target: ts.__napiBindingTarget, monitor: typeof ts.MonitorRegistry }))`,
    ])
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({ loaded: [join(modules, platformPackage, binaryFile)], target: 'native', monitor: 'function' })
  })

  it('ESM named imports of every value the typings declare work, and are the CommonJS exports', () => {
    expect(valueNames.length).toBeGreaterThan(20)
    const r = node([
      '--input-type=module',
      '-e',
      `import { createRequire } from 'node:module'
       import { ${valueNames.join(', ')} } from 'taskstream'
       const cjs = createRequire(process.cwd() + '/')('taskstream')
       const named = { ${valueNames.join(', ')} }
       const mismatched = Object.entries(named).filter(([k, v]) => v === undefined || v !== cjs[k]).map(([k]) => k)
       process.stdout.write(JSON.stringify({ mismatched, target: __napiBindingTarget }))`,
    ])
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({ mismatched: [], target: 'native' })
    // And through vitest's own import of the package.
    for (const name of valueNames) expect((taskstream as Record<string, unknown>)[name], name).toBeDefined()
  })

  it('without the platform package, the loader names it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'qwen-style-no-binary-'))
    try {
      copyFileSync(join(modules, 'taskstream', 'index.js'), join(dir, 'index.js'))
      copyFileSync(join(modules, 'taskstream', 'package.json'), join(dir, 'package.json'))
      const r = node(['-e', `try { require('./index.js') } catch (e) { process.stdout.write(JSON.stringify({ message: e.message, pkg: e.packageName })) }`], dir)
      expect(r.status, r.stderr).toBe(0)
      const { message, pkg } = JSON.parse(r.stdout) as { message: string; pkg: string }
      expect(pkg).toBe(platformPackage)
      expect(message).toMatch(new RegExp(`^Cannot find native binding for taskstream on ${target}\\. The platform package \`${platformPackage}\` is not installed\\.`))
      expect(message).toContain(`npm install ${platformPackage}@0.1.0`)
      expect(existsSync(join(dir, 'node_modules'))).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('src/types-check.ts', () => {
  it('names every export of index.d.ts, values and types', () => {
    const source = readFileSync(join(project, 'src', 'types-check.ts'), 'utf8')
    const missing = [...valueNames, ...typeNames].filter((name) => !new RegExp(`\\b${name}\\b`).test(source))
    expect(missing).toEqual([])
    expect(typeNames).toContain('MonitorTask')
    expect(typeNames).toContain('BackgroundShellResult')
  })

  it('runs every value once', async () => {
    const summary = await exerciseEveryExport()
    expect(summary.target).toBe('native')
    expect(summary.guards).toEqual([
      'standalone sleep 5',
      null,
      'npm run dev',
      'ls ',
      'echo hi',
      true,
      true,
      true,
      null,
    ])
    expect(summary.normalized).toEqual({
      analysisCommand: 'npm run dev',
      safetyCommand: 'npm run dev',
      spawnCommand: "bash -c 'npm run dev'",
      strippedTrailingAmp: true,
    })
    expect(summary.text).toEqual(['ab', '&lt;a &amp; b&gt;', 'xy', 'red', 'many spaces', true, 'conv_1'])
    expect(summary.lines).toEqual(['one', 'two'])
    expect(summary.fedNotifications.map(([, meta]) => meta.status)).toEqual(['running', 'cancelled'])
    expect(summary.nativeEntry).toMatchObject({ kind: 'monitor', maxEvents: 3 })
    expect(summary.signal).toMatchObject({ batchMs: 1000, sampleLines: 1, digest: 'templates' })
    expect(summary.signalFrozen).toBe(true)
    expect(summary.shellResult).toMatchObject({ status: 'completed', exitCode: 0, bytesWritten: 5 })
    // The fed shell, executeBackground's and the terminal shell's.
    expect(summary.shellNotifications.map(([, meta]) => meta.status)).toEqual(['completed', 'completed', 'completed'])
    expect(summary.tail).toEqual({ text: 'done', truncated: false })
    expect(summary.statusPath).toMatch(/shell-bg_[0-9a-f]{8}\.status$/)
    expect(summary.recovered).toEqual({ adopted: [], settled: [], lost: [], corrupt: [], busy: [] })
  })
})
