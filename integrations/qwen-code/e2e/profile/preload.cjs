// Loaded into every node process of the CLI through NODE_OPTIONS=--require (Node 20 refuses
// --cpu-prof there): starts V8's sampling profiler on the main thread and writes
// $TSQ_PROF_DIR/<pid>.cpuprofile when the process exits.
const inspector = require('node:inspector')
const fs = require('node:fs')
const dir = process.env.TSQ_PROF_DIR
const session = new inspector.Session()
session.connect()
session.post('Profiler.enable')
session.post('Profiler.setSamplingInterval', { interval: Number(process.env.TSQ_PROF_INTERVAL_US || 500) })
session.post('Profiler.start')
let written = false
process.on('exit', () => {
  if (written || !dir) return
  written = true
  // The in-thread session answers synchronously.
  session.post('Profiler.stop', (err, res) => {
    if (!err) fs.writeFileSync(`${dir}/${process.pid}.cpuprofile`, JSON.stringify(res.profile))
  })
})
