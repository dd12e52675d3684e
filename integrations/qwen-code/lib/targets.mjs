// What `taskstream-qwen patch` changes, per verified Qwen Code release: each file by its path inside
// the @qwen-code/qwen-code package, the sha256 of the original bytes, and exact edits. Every `find`
// text must occur exactly once in the original (a `prefix` edit: at the very start of the file); the
// edits only add a line of import and hand the work to ../runtime/runtime.mjs, keeping the CLI's code
// as the fallback.
import { kitModule } from './kit.mjs'

const IMPORT_PREFIX = '// Force strict mode and setup for ESM\n"use strict";\n'
const IMPORT_LINE = 'import * as __taskstreamQwen from "../taskstream-qwen/runtime.mjs";\n'

/** Marker present in every patched file (used to recognise an already-patched install). */
export const MARKER = '__taskstreamQwen'

const V0_24_4 = {
  version: '0.24.4',
  files: [
    {
      // The shared core chunk: Config (the two registry field initialisers), both registries, and
      // ShellToolInvocation.executeBackground.
      path: 'chunks/chunk-DPEB6S2R.js',
      sha256: '247b62f1007083ba376bedd61b96645d1d9a730c91dc268f42971ef2c8daff66',
      edits: [
        { prefix: IMPORT_PREFIX, insert: IMPORT_LINE },
        {
          find: '  monitorRegistry = new MonitorRegistry();\n',
          replace: '  monitorRegistry = __taskstreamQwen.createMonitorRegistry(MonitorRegistry);\n',
        },
        {
          find: '  backgroundShellRegistry = new BackgroundShellRegistry();\n',
          replace:
            '  backgroundShellRegistry = __taskstreamQwen.createBackgroundShellRegistry(BackgroundShellRegistry);\n',
        },
        {
          // run_shell_command with is_background: after the CLI prepared the command (trailing `&`,
          // co-author transforms), the cwd and the session's output directory, before it spawns.
          find:
            '    fs22.mkdirSync(outputDir, { recursive: true });\n' +
            '    const shellId = `bg_${crypto2.randomBytes(4).toString("hex")}`;\n' +
            '    const outputPath = path21.join(outputDir, `shell-${shellId}.output`);\n' +
            '    const entryAc = new AbortController();\n',
          before:
            '    fs22.mkdirSync(outputDir, { recursive: true });\n' +
            '    if (__taskstreamQwen.nativeShell(this.config)) {\n' +
            '      return __taskstreamQwen.executeBackgroundShell(this.config, {\n' +
            '        command: processedCommand,\n' +
            '        cwd,\n' +
            '        outputDir,\n' +
            '        statusFileGuidance,\n' +
            '        childEnv: {\n' +
            '          ...sanitizeChildEnv(process.env),\n' +
            '          QWEN_CODE: "1",\n' +
            '          TERM: "xterm-256color",\n' +
            '          ...getShellPagerEnv(shellExecutionConfig?.pager, { includeGitPager: false, platform: os5.platform() }),\n' +
            '          ...getShellContextEnvVars()\n' +
            '        }\n' +
            '      });\n' +
            '    }\n',
          // `before` replaces the first line of `find`; the rest of `find` follows unchanged.
          keepAfterFirstLine: true,
        },
      ],
    },
    {
      // The monitor tool.
      path: 'chunks/monitor-XCEGKLFN.js',
      sha256: '63508fb03c35b3e87aa0d43b068bf0e2e1d390dfabe26a991e79fd194c667bf8',
      edits: [
        { prefix: IMPORT_PREFIX, insert: IMPORT_LINE },
        {
          find:
            '  async execute(_signal) {\n' +
            '    if (_signal.aborted) {\n' +
            '      return {\n' +
            '        llmContent: "Monitor was cancelled before it could start.",\n' +
            '        returnDisplay: "Monitor cancelled."\n' +
            '      };\n' +
            '    }\n',
          append:
            '    if (__taskstreamQwen.nativeMonitor(this.config)) {\n' +
            '      return __taskstreamQwen.executeMonitor(this, {\n' +
            '        normalizeMonitorCommand,\n' +
            '        sanitizeMonitorLine,\n' +
            '        truncateDisplayDescription,\n' +
            '        getCurrentAgentId,\n' +
            '        MAX_CONCURRENT_MONITORS,\n' +
            '        DEFAULT_MAX_EVENTS,\n' +
            '        MAX_MAX_EVENTS,\n' +
            '        DEFAULT_IDLE_TIMEOUT_MS,\n' +
            '        MAX_IDLE_TIMEOUT_MS,\n' +
            '        childEnv: {\n' +
            '          ...sanitizeChildEnv(process.env),\n' +
            '          QWEN_CODE: "1",\n' +
            '          TERM: "dumb",\n' +
            '          ...getShellPagerEnv(this.config.getShellExecutionConfig().pager, { includeGitPager: false, platform: os.platform() }),\n' +
            '          ...getShellContextEnvVars()\n' +
            '        }\n' +
            '      });\n' +
            '    }\n',
        },
      ],
    },
  ],
}

/** Verified releases, by version. */
export const TARGETS = new Map([[V0_24_4.version, V0_24_4]])

export const SUPPORTED_VERSIONS = [...TARGETS.keys()]

export const { applyEdits } = await kitModule('patcher.mjs')
