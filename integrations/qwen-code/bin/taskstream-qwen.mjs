#!/usr/bin/env node
// taskstream-qwen patch [dir] | unpatch [dir] [--force] | status [dir]
import { PatchError, checkNode, patch, status, unpatch } from '../lib/patcher.mjs'

const USAGE = `Usage:
  taskstream-qwen patch [dir]      make an installed @qwen-code/qwen-code run its monitors and
                                   background shells on taskstream
  taskstream-qwen unpatch [dir]    restore the original files byte for byte
  taskstream-qwen status [dir]     say whether it is patched

dir: the @qwen-code/qwen-code package directory (default: the one the \`qwen\` on PATH runs).
Environment of qwen: TASKSTREAM_QWEN=0 (all stock), TASKSTREAM_QWEN_NATIVE=0 (registries only),
TASKSTREAM_QWEN_SIGNAL=0 (native monitors without the recommended signal setting);
task control, off unless set: TASKSTREAM_QWEN_MEMORY_LIMIT=2G, TASKSTREAM_QWEN_CPU_PERCENT=200,
TASKSTREAM_QWEN_MAX_PROCESSES=512, TASKSTREAM_QWEN_TIMEOUT=30m (see the README).`

function main(argv) {
  const args = argv.filter((a) => !a.startsWith('--'))
  const flags = new Set(argv.filter((a) => a.startsWith('--')))
  const [command, dir, ...rest] = args
  if (flags.has('--help') || command === 'help' || !command) {
    process.stdout.write(USAGE + '\n')
    return command ? 0 : 1
  }
  if (rest.length) throw new PatchError('usage', `Unexpected arguments: ${rest.join(' ')}\n${USAGE}`)
  checkNode()
  const log = (line) => process.stdout.write(`  ${line}\n`)
  switch (command) {
    case 'patch': {
      const { dir: done, manifest } = patch(dir, { log })
      process.stdout.write(
        `Patched @qwen-code/qwen-code ${manifest.qwenVersion} at ${done} with taskstream ${manifest.taskstreamVersion}.\nUndo: taskstream-qwen unpatch ${done}\n`,
      )
      return 0
    }
    case 'unpatch': {
      const { dir: done } = unpatch(dir, { force: flags.has('--force'), log })
      process.stdout.write(`Restored the original files of @qwen-code/qwen-code at ${done}.\n`)
      return 0
    }
    case 'status': {
      const st = status(dir)
      process.stdout.write(
        `@qwen-code/qwen-code ${st.version} at ${st.dir}: ${st.state}${st.supported ? '' : ' (version not supported)'}\n`,
      )
      return 0
    }
    default:
      throw new PatchError('usage', `Unknown command: ${command}\n${USAGE}`)
  }
}

try {
  process.exitCode = main(process.argv.slice(2))
} catch (err) {
  process.stderr.write(`taskstream-qwen: ${err instanceof PatchError ? err.message : err.stack}\n`)
  process.exitCode = err instanceof PatchError && err.code === 'usage' ? 2 : 1
}
