// The CLI core driven by scripted tool calls against real commands, asserting the exact texts the
// model receives: tool results and <task-notification> messages.
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { blockedSleepMessage, detectBlockedSleepPattern, type MonitorRegistration } from 'taskstream'

import type { SdkMessage } from '../src/session.js'
import {
  call,
  idFrom,
  isAlive,
  monitorEvent,
  monitorStarted,
  monitorTerminal,
  notificationsSeen,
  project,
  responsesSeen,
  scriptedModel,
  waitFor,
  type Project,
} from './support.js'

const INSPECT =
  'To inspect: /tasks (text) or the interactive Background tasks dialog (focus the footer Background tasks pill, then Enter — detail view + live updates).'
const RUNTIME = String.raw`(?:\d+ms|\d+(?:\.\d)?s|\d+m(?: \d+s)?)`

let current: Project | undefined
afterEach(() => {
  current?.cleanup()
  current = undefined
})
function setup(...args: Parameters<typeof project>): Project {
  current = project(...args)
  return current
}

const sdkNotifications = (messages: SdkMessage[]) =>
  messages.flatMap((m) => (m.type === 'system' && m.subtype === 'task_notification' ? [m.text] : []))

describe('monitor tool: a dev server', () => {
  it('starts, delivers the start-up and ready lines, and is cancelled when the session ends', async () => {
    const { cli } = setup()
    const model = scriptedModel((input) =>
      input.kind === 'prompt'
        ? [call('call_1', 'monitor', { command: 'bash scripts/dev-server.sh', description: 'dev server', idle_timeout_ms: 60_000 })]
        : [],
    )
    const session = cli.session(model, { maxWaitMs: 1500 })
    await session.run('Start the dev server and tell me when it is ready.')

    const [started] = responsesSeen(model.inputs)
    const id = idFrom(started!.result.llmContent)
    expect(id).toMatch(/^mon_[0-9a-f]{16}$/)
    expect(started!.result).toEqual({
      llmContent: monitorStarted(id, 'bash scripts/dev-server.sh', 'dev server', 1000, 60_000),
      returnDisplay: `Monitor started: dev server (${id})`,
    })
    expect(session.sdkMessages[0]).toEqual({ type: 'system', subtype: 'task_started', task_id: id, tool_use_id: 'call_1', description: 'dev server' })

    // The two lines reach the model; the dev server then keeps running, so the session stops
    // waiting after maxWaitMs and cancels it: that notification goes to the output, not the model.
    expect(notificationsSeen(model.inputs).map((n) => n.modelText)).toEqual([
      monitorEvent(id, 'call_1', 'dev server', 1, 'dev-server: compiling 12 modules'),
      monitorEvent(id, 'call_1', 'dev server', 2, 'dev-server: ready on http://localhost:5173'),
    ])
    expect(sdkNotifications(session.sdkMessages)).toEqual([
      monitorTerminal(id, 'call_1', 'dev server', 'cancelled', 2, 'bash scripts/dev-server.sh'),
    ])
    expect(session.output).toEqual([
      `Monitor started: dev server (${id})`,
      'Monitor "dev server" event #1: dev-server: compiling 12 modules',
      'Monitor "dev server" event #2: dev-server: ready on http://localhost:5173',
      'Monitor "dev server" was cancelled. (2 events)',
    ])
    expect(session.sdkMessages.at(-1)).toMatchObject({ type: 'result', subtype: 'success' })

    const entry = cli.context.monitors.get(id)!
    expect(entry.status).toBe('cancelled')
    await waitFor(() => !isAlive(entry.pid!), 3000, 'the dev server to die')
    expect(cli.tasks()).toMatch(
      new RegExp(`^Background tasks \\(1 total\\)\\n\\n\\[${id}\\] cancelled \\(2 events\\)  ${RUNTIME} pid=${entry.pid}  dev server$`),
    )
  })
})

describe('monitor tool: a failing test run', () => {
  it('delivers every line of the report, then the failure with its exit code, and the session ends on its own', async () => {
    const { cli } = setup()
    const model = scriptedModel((input) =>
      input.kind === 'prompt' ? [call('call_7', 'monitor', { command: 'bash scripts/failing-tests.sh', description: 'unit tests' })] : [],
    )
    const session = cli.session(model, { maxWaitMs: 20_000 })
    const t0 = Date.now()
    await session.run('Run the unit tests and watch them.')
    expect(Date.now() - t0).toBeLessThan(10_000)

    const id = idFrom(responsesSeen(model.inputs)[0]!.result.llmContent)
    expect(notificationsSeen(model.inputs).map((n) => n.modelText)).toEqual([
      monitorEvent(id, 'call_7', 'unit tests', 1, 'RUN  v3.2.7 /app'),
      monitorEvent(id, 'call_7', 'unit tests', 2, '✓ src/math.test.ts &gt; adds numbers'),
      monitorEvent(id, 'call_7', 'unit tests', 3, '× src/date.test.ts &gt; parses ISO dates'),
      monitorEvent(id, 'call_7', 'unit tests', 4, '→ expected &apos;2026-01-02&apos; to be &apos;2026-01-01&apos;'),
      monitorEvent(id, 'call_7', 'unit tests', 5, 'Test Files  1 failed | 1 passed (2)'),
      monitorTerminal(id, 'call_7', 'unit tests', 'failed', 5, 'bash scripts/failing-tests.sh', 'Exit code 1'),
    ])
    expect(session.output.slice(1)).toEqual([
      'Monitor "unit tests" event #1: RUN  v3.2.7 /app',
      'Monitor "unit tests" event #2: ✓ src/math.test.ts > adds numbers',
      'Monitor "unit tests" event #3: × src/date.test.ts > parses ISO dates',
      "Monitor \"unit tests\" event #4: → expected '2026-01-02' to be '2026-01-01'",
      'Monitor "unit tests" event #5: Test Files  1 failed | 1 passed (2)',
      'Monitor "unit tests" failed. (5 events)',
    ])
    // Nothing was left to cancel at the end, and no event was dropped although the entry's
    // status was already `failed` when the events reached JavaScript.
    expect(sdkNotifications(session.sdkMessages)).toEqual([])
    expect(session.droppedEvents).toEqual([])
    const entry = cli.context.monitors.get(id)!
    expect(cli.tasks()).toMatch(
      new RegExp(`^Background tasks \\(1 total\\)\\n\\n\\[${id}\\] failed: Exit code 1 \\(5 events\\)  ${RUNTIME} pid=${entry.pid}  unit tests$`),
    )
  })

  it('in a background shell: the failure notification carries the exit status and the output tail', async () => {
    const { cli, dir, tempDir } = setup()
    const model = scriptedModel((input) =>
      input.kind === 'prompt' ? [call('call_2', 'run_shell_command', { command: 'bash scripts/failing-tests.sh', is_background: true })] : [],
    )
    const session = cli.session(model, { maxWaitMs: 20_000 })
    await session.run('Run the unit tests in the background.')

    const { result } = responsesSeen(model.inputs)[0]!
    const id = idFrom(result.llmContent)
    expect(id).toMatch(/^bg_[0-9a-f]{8}$/)
    const shell = cli.context.shells.get(id)!
    const outputFile = join(tempDir, 'background-shells', 'conv-1', `shell-${id}.output`)
    expect(result).toEqual({
      llmContent: `Background shell started.\nid: ${id}\npid: ${shell.pid}\noutput file: ${outputFile}\n${INSPECT} Read the output file directly to view the captured output.`,
      returnDisplay: `Background shell ${id} started (pid ${shell.pid}).`,
    })
    const [notification, ...more] = notificationsSeen(model.inputs)
    expect(more).toEqual([])
    expect(notification!.displayText).toBe('Background shell "bash scripts/failing-tests.sh" failed.')
    expect(notification!.modelText).toBe(
      [
        '<task-notification>',
        `<task-id>${id}</task-id>`,
        '<kind>shell</kind>',
        '<status>failed</status>',
        '<summary>Shell command "bash scripts/failing-tests.sh" failed.</summary>',
        '<command>bash scripts/failing-tests.sh</command>',
        `<cwd>${dir}</cwd>`,
        `<pid>${shell.pid}</pid>`,
        '<result>exited with code 1</result>',
        '<output-tail truncated="false"> RUN  v3.2.7 /app',
        ' ✓ src/math.test.ts &gt; adds numbers',
        ' × src/date.test.ts &gt; parses ISO dates',
        '   → expected &apos;2026-01-02&apos; to be &apos;2026-01-01&apos;',
        ' Test Files  1 failed | 1 passed (2)</output-tail>',
        `<output-file>${outputFile}</output-file>`,
        '</task-notification>',
      ].join('\n'),
    )
    expect(cli.tasks()).toMatch(
      new RegExp(
        `^Background tasks \\(1 total\\)\\n\\n\\[${id}\\] failed: exited with code 1  ${RUNTIME} pid=${shell.pid}  bash scripts/failing-tests.sh\\n {12}output: ${outputFile}$`,
      ),
    )
  })
})

describe('shell tool: the foreground sleep guard', () => {
  it('refuses `sleep 30` in the foreground with the exact guidance, runs it in the background, and task_stop cancels it', async () => {
    const { cli, dir, tempDir } = setup()
    expect(detectBlockedSleepPattern('sleep 30')).toBe('standalone sleep 30')
    let shellId = ''
    const model = scriptedModel((input) => {
      if (input.kind === 'prompt') return [call('call_1', 'run_shell_command', { command: 'sleep 30' })]
      const [response] = input.kind === 'tool_results' ? input.responses : []
      if (response?.callId === 'call_1') return [call('call_2', 'run_shell_command', { command: 'sleep 30', is_background: true })]
      if (response?.callId === 'call_2') {
        shellId = idFrom(response.result.llmContent)
        return [call('call_3', 'task_stop', { task_id: shellId })]
      }
      return []
    })
    const session = cli.session(model, { maxWaitMs: 10_000 })
    const t0 = Date.now()
    await session.run('Wait 30 seconds.')
    expect(Date.now() - t0).toBeLessThan(10_000)

    const [refused, started, stopped] = responsesSeen(model.inputs).map((r) => r.result)
    const guidance =
      'Blocked: standalone sleep 30. Run blocking commands in the background with is_background: true. For streaming events (watching logs, polling APIs), use the Monitor tool. ' +
      'If you genuinely need a standalone delay (rate limiting, deliberate pacing), add a trailing comment like `# intentional-sleep: wait for MCP rate limit reset` (up to 10 minutes).'
    expect(blockedSleepMessage('sleep 30')).toBe(guidance)
    expect(refused).toEqual({ llmContent: guidance, returnDisplay: guidance, error: { type: 'invalid_tool_params', message: guidance } })

    const shell = cli.context.shells.get(shellId)!
    expect(cli.context.shells.getAll()).toHaveLength(1) // the refused one never ran
    const outputFile = join(tempDir, 'background-shells', 'conv-1', `shell-${shellId}.output`)
    expect(started!.llmContent).toBe(
      `Background shell started.\nid: ${shellId}\npid: ${shell.pid}\noutput file: ${outputFile}\n${INSPECT} Read the output file directly to view the captured output.`,
    )
    expect(stopped).toEqual({
      llmContent: `Cancellation requested for background shell ${shellId}. Its final status arrives as a notification.`,
      returnDisplay: `Stopping background shell ${shellId}.`,
    })
    expect(notificationsSeen(model.inputs)).toEqual([
      {
        kind: 'shell',
        taskId: shellId,
        status: 'cancelled',
        displayText: 'Background shell "sleep 30" was cancelled.',
        modelText: [
          '<task-notification>',
          `<task-id>${shellId}</task-id>`,
          '<kind>shell</kind>',
          '<status>cancelled</status>',
          '<summary>Shell command "sleep 30" was cancelled.</summary>',
          '<command>sleep 30</command>',
          `<cwd>${dir}</cwd>`,
          `<pid>${shell.pid}</pid>`,
          `<output-file>${outputFile}</output-file>`,
          '</task-notification>',
        ].join('\n'),
      },
    ])
    expect(isAlive(shell.pid!)).toBe(false)
  })

  it('lets a short foreground command run, and an intentional sleep through', () => {
    const { cli, dir } = setup()
    const signal = new AbortController().signal
    expect(cli.shellTool.execute({ command: 'echo hello && echo oops >&2; exit 3' }, { signal, callId: 'c1' })).toEqual({
      llmContent: 'Command: echo hello && echo oops >&2; exit 3\nDirectory: (root)\nOutput: hello\noops\nError: (none)\nExit Code: 3\nSignal: (none)',
      returnDisplay: 'hello\noops',
    })
    expect(cli.shellTool.validate({ command: 'sleep 2 # intentional-sleep: wait for the API rate limit to reset' })).toBeNull()
    expect(cli.shellTool.validate({ command: 'sleep 2 && make' })).toBe(
      'Blocked: sleep 2 followed by: make. Run blocking commands in the background with is_background: true. For streaming events (watching logs, polling APIs), use the Monitor tool. ' +
        'Split into two calls: first `sleep N # intentional-sleep: <reason>` (standalone), then the follow-up command.',
    )
    expect(cli.shellTool.validate({ command: '   ' })).toBe('Command cannot be empty.')
    expect(cli.shellTool.validate({ command: 'ls', timeout: 1.5 })).toBe('Timeout must be an integer number of milliseconds.')
    expect(cli.shellTool.validate({ command: 'ls', directory: 'relative' })).toBe('Directory must be an absolute path.')
    expect(cli.shellTool.validate({ command: 'ls', directory: `${dir}-evil` })).toBe(
      `Directory '${dir}-evil' is not within any of the registered workspace directories.`,
    )
    expect(cli.shellTool.validate({ command: 'ls', directory: join(dir, 'scripts') })).toBeNull()
  })
})

describe('monitor tool: a watcher stopped with task_stop', () => {
  it('delivers the watched changes, then the cancelled notification, and nothing after', async () => {
    const { cli, dir } = setup()
    const log = join(dir, 'app.log')
    let id = ''
    const model = scriptedModel((input) => {
      if (input.kind === 'prompt') {
        return [call('call_1', 'monitor', { command: 'bash scripts/watcher.sh app.log', description: 'file watcher', max_events: 50 })]
      }
      if (input.kind === 'tool_results') {
        id ||= idFrom(input.responses[0]!.result.llmContent)
        return []
      }
      const texts = input.notifications.map((n) => n.displayText)
      // The "user" edits two files once the watcher is up; the model stops it after the second.
      if (texts.some((t) => t.endsWith(': watching app.log for changes'))) {
        appendFileSync(log, 'changed: src/app.ts\n')
        appendFileSync(log, 'changed: src/util.ts\n')
      }
      if (texts.some((t) => t.endsWith(': changed: src/util.ts'))) return [call('call_2', 'task_stop', { task_id: id })]
      return []
    })
    const session = cli.session(model, { maxWaitMs: 10_000 })
    await session.run('Watch app.log and stop once util.ts changed.')

    expect(responsesSeen(model.inputs)[1]!.result).toEqual({
      llmContent: `Monitor ${id} stopped (3 events delivered).`,
      returnDisplay: `Stopped monitor ${id}.`,
    })
    expect(notificationsSeen(model.inputs).map((n) => n.modelText)).toEqual([
      monitorEvent(id, 'call_1', 'file watcher', 1, 'watching app.log for changes'),
      monitorEvent(id, 'call_1', 'file watcher', 2, 'changed: src/app.ts'),
      monitorEvent(id, 'call_1', 'file watcher', 3, 'changed: src/util.ts'),
      monitorTerminal(id, 'call_1', 'file watcher', 'cancelled', 3, 'bash scripts/watcher.sh app.log'),
    ])
    // cancel() notifies inside the call, so the notification is printed before the tool's display.
    expect(session.output.slice(-2)).toEqual(['Monitor "file watcher" was cancelled. (3 events)', `Stopped monitor ${id}.`])
    expect(sdkNotifications(session.sdkMessages)).toEqual([]) // nothing left for abortAll()

    const entry = cli.context.monitors.get(id)!
    await waitFor(() => !isAlive(entry.pid!), 3000, 'the watcher to die')
    appendFileSync(log, 'changed: src/late.ts\n')
    await new Promise((r) => setTimeout(r, 200))
    expect(entry.eventCount).toBe(3)
    expect(cli.tasks()).toMatch(
      new RegExp(`^\\[${id}\\] cancelled \\(3 events\\)  ${RUNTIME} pid=${entry.pid}  file watcher$`, 'm'),
    )
    expect(cli.taskStopTool.execute({ task_id: id })).toEqual({
      llmContent: `Task ${id} is not running (status: cancelled).`,
      returnDisplay: `Task ${id} is not running (status: cancelled).`,
      error: { type: 'execution_failed', message: `Task ${id} is not running (status: cancelled).` },
    })
  })

  it('the session drops events queued for a monitor that was stopped before they reached the model', async () => {
    const { cli } = setup()
    const monitors = cli.context.monitors
    const registration: MonitorRegistration = {
      monitorId: 'mon-fed',
      command: 'tail -f build.log',
      description: 'build log',
      status: 'running',
      startTime: Date.now(),
      eventCount: 0,
      lastEventTime: Date.now(),
      maxEvents: 100,
      idleTimeoutMs: 60_000,
      droppedLines: 0,
      outputFile: '',
      abortController: new AbortController(),
    }
    const model = scriptedModel((input) => {
      if (input.kind === 'prompt') {
        // Fed mode: the CLI feeds the registry itself. The event is queued, then the model stops it.
        monitors.register(registration)
        monitors.emitEvent('mon-fed', 'compiling…')
        return [call('call_9', 'task_stop', { task_id: 'mon-fed' })]
      }
      return []
    })
    const session = cli.session(model)
    await session.run('Stop the build log monitor.')
    expect(session.droppedEvents.map((n) => n.displayText)).toEqual(['Monitor "build log" event #1: compiling…'])
    expect(notificationsSeen(model.inputs).map((n) => n.displayText)).toEqual(['Monitor "build log" was cancelled. (1 events)'])
  })
})

describe('monitor tool: refusals', () => {
  it('returns the validation, cap and spawn-failure texts', () => {
    const { cli, dir } = setup()
    const signal = new AbortController().signal
    const run = (args: Record<string, unknown>, callId = 'c') => cli.monitorTool.execute(args as never, { signal, callId })

    expect(run({ command: 'npm run dev & tail -f server.log' }).llmContent).toBe(
      'Monitor commands must not contain non-final top-level background operators. Remove "&" and let the monitor manage process lifetime.',
    )
    expect(run({ command: 'tail -f $(ls -t logs/*.log | head -1)' }).llmContent).toBe(
      'Monitor commands must not use command substitution ($(...), backticks, <(...) or >(...)).',
    )
    expect(run({ command: 'tail -f app.log', directory: '/etc' }).llmContent).toBe(
      "Directory '/etc' is not within any of the registered workspace directories.",
    )
    expect(run({ command: 'tail -f app.log', max_events: 0 }).llmContent).toBe('max_events must be a positive integer.')

    const aborted = AbortSignal.abort()
    expect(cli.monitorTool.execute({ command: 'tail -f app.log' }, { signal: aborted, callId: 'c' })).toEqual({
      llmContent: 'Monitor was cancelled before it could start.',
      returnDisplay: 'Monitor cancelled.',
    })

    expect(run({ command: 'echo hi', directory: join(dir, 'missing') })).toEqual({
      llmContent: 'Monitor failed to start: No such file or directory (os error 2)',
      returnDisplay: 'Monitor failed: No such file or directory (os error 2)',
    })

    for (let i = 0; i < 16; i++) expect(run({ command: 'tail -f /dev/null', description: `idle ${i}` }).llmContent).toMatch(/^Monitor started\./)
    const capped = 'Cannot start monitor: maximum concurrent monitors (16) reached. Stop an existing monitor first.'
    expect(run({ command: 'tail -f /dev/null' })).toEqual({
      llmContent: capped,
      returnDisplay: capped,
      error: { type: 'execution_failed', message: capped },
    })
    const pids = cli.context.monitors.getRunning().map((e) => e.pid!)
    cli.context.monitors.abortAll({ notify: false })
    return waitFor(() => pids.every((pid) => !isAlive(pid)), 3000, 'the idle monitors to die')
  })

  it('shows a long description cut to 80 characters in its display', () => {
    const { cli } = setup()
    const description = `tail the very long log of ${'x'.repeat(80)}`
    const result = cli.monitorTool.execute({ command: 'tail -f /dev/null', description }, { signal: new AbortController().signal, callId: 'c' })
    const id = idFrom(result.llmContent)
    expect(result.returnDisplay).toBe(`Monitor started: ${description.slice(0, 79)}… (${id})`)
    expect(result.llmContent).toContain(`\ndescription: ${description}\n`)
    expect(cli.monitorTool.getDescription({ command: 'tail -f /dev/null' })).toBe('Monitor: tail -f /dev/null')
  })
})

describe('/tasks', () => {
  it('lists shells and monitors by start time; says so when there are none', async () => {
    const { cli, tempDir } = setup()
    expect(cli.tasks()).toBe('No background tasks.')
    const signal = new AbortController().signal
    const shell = cli.shellTool.execute({ command: 'echo built', is_background: true }, { signal, callId: 'a' })
    const shellId = idFrom(shell.llmContent)
    await cli.shellTool.backgroundHandles.get(shellId)?.done
    const mon = cli.monitorTool.execute({ command: 'tail -f /dev/null', description: 'idle log' }, { signal, callId: 'b' })
    const monId = idFrom(mon.llmContent)
    const s = cli.context.shells.get(shellId)!
    const m = cli.context.monitors.get(monId)!
    const outputFile = join(tempDir, 'background-shells', 'conv-1', `shell-${shellId}.output`)
    expect(cli.tasks({ interactive: true })).toMatch(
      new RegExp(
        [
          '^Tip: focus the Background tasks pill in the footer \\(use ↓ from an empty composer\\) and press Enter for the interactive dialog with detail view \\+ live updates\\.',
          '',
          'Background tasks \\(2 total\\)',
          '',
          `\\[${shellId}\\] completed \\(exit 0\\)  ${RUNTIME} pid=${s.pid}  echo built`,
          ` {12}output: ${outputFile}`,
          `\\[${monId}\\] running \\(0 events\\)  ${RUNTIME} pid=${m.pid}  idle log$`,
        ].join('\\n'),
      ),
    )
  })
})
