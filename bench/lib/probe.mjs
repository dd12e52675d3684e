// The measurement probe shared by the benchmarks: event-loop delay, event-loop
// utilisation, process CPU, JS main-thread scheduling and RSS over a window.
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'

/** Resolution of the event-loop delay histogram; delays are reported above it. */
export const ELD_RESOLUTION_MS = 5

/** [time on a CPU, time runnable but waiting for a CPU] in ms of one thread (Linux schedstat), or NaNs. */
export function threadSched(tid) {
  try {
    const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number)
    return [run / 1e6, wait / 1e6]
  } catch {
    return [NaN, NaN]
  }
}

/** Event-loop delay, ELU, CPU and RSS over a window. */
export function probe() {
  const h = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS })
  h.enable()
  const elu0 = performance.eventLoopUtilization()
  const cpu0 = process.cpuUsage()
  const sched0 = threadSched(process.pid)
  const rss0 = process.memoryUsage().rss
  const t0 = performance.now()
  let rssPeak = rss0
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20)
  return {
    stop() {
      clearInterval(sampler)
      h.disable()
      const elapsedMs = performance.now() - t0
      const elu = performance.eventLoopUtilization(elu0)
      const cpu = process.cpuUsage(cpu0)
      const sched = threadSched(process.pid)
      const excess = (v) => Math.max(0, v / 1e6 - ELD_RESOLUTION_MS)
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
      return {
        elapsedMs,
        eldP50: excess(h.percentile(50)),
        eldP99: excess(h.percentile(99)),
        eldMax: excess(h.max),
        eldSamples: h.count,
        eluActiveMs: elu.active,
        eluUtilization: elu.utilization,
        cpuMs: (cpu.user + cpu.system) / 1000,
        cpuUserMs: cpu.user / 1000,
        cpuSystemMs: cpu.system / 1000,
        mainThreadCpuMs: sched[0] - sched0[0],
        mainThreadRunqueueMs: sched[1] - sched0[1],
        rssStart: rss0,
        rssPeakSampled: rssPeak,
        rssGrowthMax: Math.max(rssPeak, process.resourceUsage().maxRSS * 1024) - rss0,
      }
    },
  }
}
