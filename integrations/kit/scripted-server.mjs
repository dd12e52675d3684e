// The HTTP skeleton of the integrations' scripted model servers: loopback only, bounded (request
// bodies, number of requests, reply waits), every request body recorded. What a provider's API
// looks like (its routes, its replies, its errors) is the caller's `api`.
import http from 'node:http'

const MAX_BODY_BYTES = 32 * 1024 * 1024
const MAX_REQUESTS = 200

/**
 * Starts a server on 127.0.0.1 (a free port). `api`:
 * - `route(req)`: undefined for a request the API does not have (answered by `api.notFound`), or
 *   `{ immediate?(res) }` for one answered at once without the script, or any other object (the
 *   route, handed to `api.send`);
 * - `notFound(res, req)`, `limitReached(res)`, `failed(res, message)`: the API's error replies;
 * - `send(res, body, reply, route)`: the reply to a scripted request.
 * Each scripted request is answered by `script(body, { index, requests, route })`, which returns (or
 * resolves to) the reply; it is recorded in `server.requests`.
 */
export async function startScriptedServer(script, api, { replyTimeoutMs = 120_000 } = {}) {
  const requests = []
  const waiters = new Set()
  const notify = () => {
    for (const w of [...waiters]) w()
  }
  const server = http.createServer((req, res) => {
    const route = api.route(req)
    if (!route) return api.notFound(res, req)
    let size = 0
    const chunks = []
    req.on('data', (c) => {
      size += c.length
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413)
        res.end()
        req.destroy()
        return
      }
      chunks.push(c)
    })
    req.on('end', async () => {
      if (res.writableEnded) return
      if (route.immediate) return route.immediate(res)
      if (requests.length >= MAX_REQUESTS) return api.limitReached(res)
      let body
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        res.writeHead(400)
        res.end()
        return
      }
      const index = requests.length
      requests.push(body)
      notify()
      let reply
      try {
        let timer
        reply = await Promise.race([
          Promise.resolve(script(body, { index, requests, route })),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`script reply ${index} timed out`)), replyTimeoutMs)
            // A reply held on purpose (until the CLI is killed) must not keep the test process alive
            // after close(): the open server does that while it matters.
            timer.unref?.()
          }),
        ]).finally(() => clearTimeout(timer))
      } catch (err) {
        return api.failed(res, String(err && err.message))
      }
      api.send(res, body, reply, route)
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return {
    port,
    requests,
    /** Resolves once `predicate(requests)` holds (checked on every new request), or rejects after timeoutMs. */
    waitFor(predicate, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(requests)) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve()
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error('model server: condition not met in time'))
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
    close() {
      server.closeAllConnections?.()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** Writes a JSON reply. */
export function json(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(value))
}
