// The `patch | unpatch | status [dir]` command every integration ships (bin/taskstream-<cli>.mjs).
import { PatchError, checkNode } from './patcher.mjs'

/**
 * Runs the command line `argv` against `patcher` (definePatcher's result). `host`: `tool` (the
 * command's name), `packageName` and `bin` (the CLI's npm package and command), `versionKey` (the
 * manifest field holding the CLI's version), `what` (what the patch makes the CLI do, for the
 * usage text) and `envHelp` (the switches of the patched CLI, a paragraph). Sets process.exitCode.
 */
export function runPatchCli(argv, host, patcher) {
  const usage = `Usage:
  ${host.tool} patch [dir]      make an installed ${host.packageName} ${host.what}
  ${host.tool} unpatch [dir]    restore the original files byte for byte
  ${host.tool} status [dir]     say whether it is patched

dir: the ${host.packageName} package directory (default: the one the \`${host.bin}\` on PATH runs).
${host.envHelp}`
  const main = () => {
    const args = argv.filter((a) => !a.startsWith('--'))
    const flags = new Set(argv.filter((a) => a.startsWith('--')))
    const [command, dir, ...rest] = args
    if (flags.has('--help') || command === 'help' || !command) {
      process.stdout.write(usage + '\n')
      return command ? 0 : 1
    }
    if (rest.length) throw new PatchError('usage', `Unexpected arguments: ${rest.join(' ')}\n${usage}`)
    checkNode(undefined, host.tool)
    const log = (line) => process.stdout.write(`  ${line}\n`)
    switch (command) {
      case 'patch': {
        const { dir: done, manifest } = patcher.patch(dir, { log })
        process.stdout.write(
          `Patched ${host.packageName} ${manifest[host.versionKey]} at ${done} with taskstream ${manifest.taskstreamVersion}.\nUndo: ${host.tool} unpatch ${done}\n`,
        )
        return 0
      }
      case 'unpatch': {
        const { dir: done } = patcher.unpatch(dir, { force: flags.has('--force'), log })
        process.stdout.write(`Restored the original files of ${host.packageName} at ${done}.\n`)
        return 0
      }
      case 'status': {
        const st = patcher.status(dir)
        process.stdout.write(`${host.packageName} ${st.version} at ${st.dir}: ${st.state}${st.supported ? '' : ' (version not supported)'}\n`)
        return 0
      }
      default:
        throw new PatchError('usage', `Unknown command: ${command}\n${usage}`)
    }
  }
  try {
    process.exitCode = main()
  } catch (err) {
    process.stderr.write(`${host.tool}: ${err instanceof PatchError ? err.message : err.stack}\n`)
    process.exitCode = err instanceof PatchError && err.code === 'usage' ? 2 : 1
  }
}
