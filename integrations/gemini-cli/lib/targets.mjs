// What `taskstream-gemini patch` changes, per verified Gemini CLI release: each file by its path inside
// the @google/gemini-cli package, the sha256 of the original bytes, and exact edits (the shared
// `applyEdits` of the kit's patcher.mjs: every `find` text occurs exactly once in the original). The
// edits add a line of import and hand background jobs (and, in the interactive UI, every command the
// CLI would run on node-pty) to ../runtime/runtime.mjs, keeping the CLI's code as the fallback.
import { kitModule } from './kit.mjs'

export const { applyEdits } = await kitModule('patcher.mjs')

/** The first line of every bundle chunk (esbuild's ESM `require` shim). */
const CHUNK_PREFIX =
  "const require = (await import('node:module')).createRequire(import.meta.url); const __chunk_filename = (await import('node:url')).fileURLToPath(import.meta.url); const __chunk_dirname = (await import('node:path')).dirname(__chunk_filename);\n"
const IMPORT_LINE = 'import * as __taskstreamGemini from "../taskstream-gemini/runtime.mjs";\n'

/** Marker present in every patched file (used to recognise an already-patched install). */
export const MARKER = '__taskstreamGemini'

const V0_61_0 = {
  version: '0.61.0',
  files: [
    {
      // The core chunk the `gemini` command loads (bundle/gemini.js and gemini-3HFX2LNT.js import it):
      // ShellExecutionService, ExecutionLifecycleService and the run_shell_command tool. Two older
      // copies of this chunk ship in the package (chunk-5FZXKDXH.js, chunk-Y2J3C62M.js); no module
      // the `gemini` command loads imports them, so they are left alone.
      path: 'bundle/chunk-JDPZ4CE3.js',
      sha256: '901004474485b55896feaed563d2e1f75bce021a9245ffbd50724028f7926ba6',
      edits: [
        { prefix: CHUNK_PREFIX, insert: IMPORT_LINE },
        {
          // run_shell_command: a command with is_background runs as a taskstream background shell;
          // every other command (and any the runtime declines) runs as stock.
          find: '      const { result: resultPromise, pid } = await ShellExecutionService.execute(commandToExecute, cwd, (event) => {\n',
          replace:
            '      const { result: resultPromise, pid } = await __taskstreamGemini.execute(ShellExecutionService, ExecutionLifecycleService, Boolean(this.params.is_background), commandToExecute, cwd, (event) => {\n',
        },
        {
          // ShellExecutionService.execute(), asked for a pty (the interactive UI: the model's
          // commands and the user's `!` commands): the command runs in taskstream's terminal mode
          // (runtime executeTerminal), so that one moved to the background is a taskstream job;
          // any the runtime declines (a sandbox, Windows, no taskstream) runs on node-pty as stock.
          find:
            '  static async execute(commandToExecute, cwd, onOutputEvent, abortSignal, shouldUseNodePty, shellExecutionConfig) {\n' +
            '    if (shouldUseNodePty) {\n',
          append:
            '      const __taskstreamRun = await __taskstreamGemini.executeTerminal(this, ExecutionLifecycleService, commandToExecute, cwd, onOutputEvent, abortSignal, shellExecutionConfig);\n' +
            '      if (__taskstreamRun) {\n' +
            '        return __taskstreamRun;\n' +
            '      }\n',
        },
        {
          // ShellExecutionService.background(pid) as the UI calls it (Ctrl+B on a `!` command: no
          // session, no command): a taskstream job's, where stock reads them from its node-pty entry.
          find:
            '    const resolvedSessionId = sessionId ?? activePty?.sessionId ?? activeChild?.sessionId;\n' +
            '    const resolvedCommand = command ?? activePty?.command ?? activeChild?.command ?? "unknown command";\n',
          replace:
            '    const resolvedSessionId = sessionId ?? activePty?.sessionId ?? activeChild?.sessionId ?? __taskstreamGemini.jobSessionId(pid);\n' +
            '    const resolvedCommand = command ?? activePty?.command ?? activeChild?.command ?? __taskstreamGemini.jobCommand(pid) ?? "unknown command";\n',
        },
        {
          // ShellExecutionService.resizePty(): a taskstream terminal is resized by taskstream (the
          // UI resizes the pty of the job it shows to its panel, as stock).
          find: '  static resizePty(pid, cols, rows) {\n',
          append: '    if (__taskstreamGemini.resizeTerminal(pid, cols, rows)) {\n      return;\n    }\n',
        },
        {
          // ShellExecutionService.background(): for a taskstream job the log is taskstream's output
          // file (linked at Gemini's own log path), not a write stream fed from JavaScript.
          find:
            '    this.backgroundProcessHistory.set(resolvedSessionId, history);\n' +
            '    const logPath = this.getLogFilePath(pid);\n',
          before:
            '    this.backgroundProcessHistory.set(resolvedSessionId, history);\n' +
            '    if (__taskstreamGemini.backgroundLog(this, pid)) {\n' +
            '      ExecutionLifecycleService.background(pid);\n' +
            '      return;\n' +
            '    }\n',
          keepAfterFirstLine: true,
        },
        {
          // Config's tool registration: stop_background_process after the two background tools.
          find:
            '    maybeRegister(ReadBackgroundOutputTool, () => registry2.registerTool(new ReadBackgroundOutputTool(this, this.messageBus)));\n',
          append:
            '    __taskstreamGemini.registerTools({ config: this, messageBus: this.messageBus, registry: registry2, maybeRegister, BaseDeclarativeTool, BaseToolInvocation, Kind, ToolErrorType, ShellExecutionService, ExecutionLifecycleService });\n',
        },
        {
          // The agent loop (LegacyAgentProtocol, the headless runner's): when the model ends its
          // turn while a monitor runs, its updates become the next turn.
          find: '        if (finishedReason !== void 0) {\n          this._finishStream(mapFinishReason(finishedReason));\n',
          before:
            '        const __taskstreamHeld = await __taskstreamGemini.heldMonitorUpdates(this._config, this._abortController.signal);\n' +
            '        if (__taskstreamHeld) {\n' +
            '          currentParts = [{ text: __taskstreamHeld }];\n' +
            '          isAfterToolResponse = false;\n' +
            '          continue;\n' +
            '        }\n' +
            '        if (finishedReason !== void 0) {\n',
          keepAfterFirstLine: true,
        },
        {
          // The same loop: updates that arrived while the tools ran go with their responses.
          find: '      currentParts = toolResponseParts;\n',
          replace: '      currentParts = __taskstreamGemini.withMonitorUpdates(toolResponseParts);\n',
        },
      ],
    },
    {
      // The headless runner (runNonInteractive): its default loop, which the `gemini -p` command
      // runs unless the agent-session runner is turned on (that one is LegacyAgentProtocol, above).
      path: 'bundle/gemini-3HFX2LNT.js',
      sha256: '5b46effe410aff87b226da5443b4d191441daf913a2461952525599bd9686753',
      edits: [
        { prefix: CHUNK_PREFIX, insert: IMPORT_LINE },
        {
          // Monitor updates that arrived while the tools ran go with their responses.
          find: '          currentMessages = [{ role: "user", parts: toolResponseParts }];\n',
          replace: '          currentMessages = [{ role: "user", parts: __taskstreamGemini.withMonitorUpdates(toolResponseParts) }];\n',
        },
        {
          // The model ended its turn: while a monitor runs, its updates become the next turn.
          find: '        } else {\n          if (streamFormatter) {\n            const metrics = uiTelemetryService.getMetrics();\n',
          before:
            '        } else {\n' +
            '          const __taskstreamHeld = await __taskstreamGemini.heldMonitorUpdates(config, abortController.signal);\n' +
            '          if (__taskstreamHeld) {\n' +
            '            currentMessages = [{ role: "user", parts: [{ text: __taskstreamHeld }] }];\n' +
            '            continue;\n' +
            '          }\n',
          keepAfterFirstLine: true,
        },
      ],
    },
    {
      // The interactive UI (the App component and its useGeminiStream hook): monitor updates show as
      // history rows when they arrive and reach the model as turns of their own when it is idle, or
      // with the next tool responses. (Stock hands background injections to the model only as
      // "user steering" hints, whitespace collapsed, and with model steering off, which is the
      // default, only when tool responses happen to go out.)
      path: 'bundle/interactiveCli-TRXNUIPM.js',
      sha256: '3de8fb28691b362f0007f935aea8adc7c7a01006fff757ab69808212254e24d3',
      edits: [
        { prefix: CHUNK_PREFIX, insert: IMPORT_LINE },
        {
          // App: where it listens for injections, it also listens for monitor updates.
          find: '    config.injectionService.onInjection(hintListener);\n    return () => {\n      config.injectionService.offInjection(hintListener);\n',
          replace:
            '    config.injectionService.onInjection(hintListener);\n' +
            '    const __taskstreamOff = __taskstreamGemini.onMonitorUpdate((display) => {\n' +
            '      historyManager.addItem({ type: "info", text: display }, Date.now());\n' +
            '      setPendingHintCount((prev) => prev + 1);\n' +
            '    });\n' +
            '    return () => {\n' +
            '      __taskstreamOff();\n' +
            '      config.injectionService.offInjection(hintListener);\n',
        },
        {
          // App, idle: pending monitor updates become the next turn (model steering on or off);
          // the steering hints then go as stock sends them.
          find:
            '    if (!isConfigInitialized || !config.isModelSteeringEnabled() || streamingState !== "idle" /* Idle */ || !isMcpReady || isToolAwaitingConfirmation(pendingHistoryItems)) {\n' +
            '      return;\n' +
            '    }\n' +
            '    const pendingHint = consumePendingHints();\n',
          replace:
            '    if (!isConfigInitialized || streamingState !== "idle" /* Idle */ || !isMcpReady || isToolAwaitingConfirmation(pendingHistoryItems)) {\n' +
            '      return;\n' +
            '    }\n' +
            '    const __taskstreamUpdate = __taskstreamGemini.takeMonitorUpdates();\n' +
            '    if (__taskstreamUpdate) {\n' +
            '      void submitQuery([{ text: __taskstreamUpdate }]);\n' +
            '      return;\n' +
            '    }\n' +
            '    if (!config.isModelSteeringEnabled()) {\n' +
            '      return;\n' +
            '    }\n' +
            '    const pendingHint = consumePendingHints();\n',
        },
        {
          // useGeminiStream, sending tool responses: pending monitor updates go first.
          find: '      const prompt_ids = geminiTools.map(\n        (toolCall) => toolCall.request.prompt_id\n      );\n      submitQuery(\n        responsesToSend,\n',
          replace:
            '      __taskstreamGemini.addMonitorUpdates(responsesToSend);\n' +
            '      const prompt_ids = geminiTools.map(\n        (toolCall) => toolCall.request.prompt_id\n      );\n      submitQuery(\n        responsesToSend,\n',
        },
      ],
    },
  ],
}

/** Verified releases, by version. */
export const TARGETS = new Map([[V0_61_0.version, V0_61_0]])

export const SUPPORTED_VERSIONS = [...TARGETS.keys()]
