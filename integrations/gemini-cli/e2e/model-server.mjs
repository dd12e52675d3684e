// A scripted Generative Language API server for driving the real Gemini CLI offline (headless or in
// its UI). Loopback only, bounded (request bodies, number of requests, reply waits). Answers
// `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` with server-sent events and
// `:generateContent` with JSON; `:countTokens` with a fixed count. Each generate request is answered
// by `script(request, ctx)`, which returns (or resolves to) `{ text }` or
// `{ toolCalls: [{ name, args }] }`; every request body is recorded in `server.requests`.
import http from 'node:http'

const MAX_BODY_BYTES = 32 * 1024 * 1024
const MAX_REQUESTS = 200

/**
 * The turns of a request, in order: [{ role, text, calls, responses }] where `calls` are the model's
 * function calls and `responses` the tool results ({ name, output }) sent back to it.
 */
export function turns(body) {
  return (body.contents ?? []).map((c) => {
    const parts = c.parts ?? []
    return {
      role: c.role,
      text: parts.map((p) => p.text ?? '').join(''),
      calls: parts.filter((p) => p.functionCall).map((p) => p.functionCall),
      responses: parts
        .filter((p) => p.functionResponse)
        .map((p) => ({ name: p.functionResponse.name, output: responseText(p.functionResponse.response) })),
    }
  })
}

function responseText(response) {
  if (response == null) return ''
  if (typeof response.output === 'string') return response.output
  if (typeof response.error === 'string') return response.error
  return JSON.stringify(response)
}

/** Every tool result the model was sent, over all requests so far, in order (deduplicated). */
export function toolResults(requests) {
  const seen = new Set()
  const out = []
  for (const body of requests) {
    for (const t of turns(body)) {
      for (const r of t.responses) {
        const key = `${r.name}\u0000${r.output}`
        if (seen.has(key)) continue
        seen.add(key)
        out.push(r)
      }
    }
  }
  return out
}

export async function startModelServer(script, { replyTimeoutMs = 120_000 } = {}) {
  const requests = []
  const waiters = new Set()
  const notify = () => {
    for (const w of [...waiters]) w()
  }
  const server = http.createServer((req, res) => {
    const m = /^\/v1beta\/models\/([^/:?]+):(streamGenerateContent|generateContent|countTokens)(\?.*)?$/.exec(req.url)
    if (req.method !== 'POST' || !m) {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { code: 404, message: `not scripted: ${req.method} ${req.url}`, status: 'NOT_FOUND' } }))
      return
    }
    const [, model, method] = m
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
      if (method === 'countTokens') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ totalTokens: 10 }))
        return
      }
      if (requests.length >= MAX_REQUESTS) {
        res.writeHead(429, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: 429, message: 'request limit of the scripted model reached', status: 'RESOURCE_EXHAUSTED' } }))
        return
      }
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
          Promise.resolve(script(body, { index, requests, model })),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`script reply ${index} timed out`)), replyTimeoutMs)
          }),
        ]).finally(() => clearTimeout(timer))
      } catch (err) {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: 500, message: String(err && err.message), status: 'INTERNAL' } }))
        return
      }
      send(res, method === 'streamGenerateContent', reply ?? { text: 'done' })
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}`,
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

function send(res, stream, reply) {
  const parts = []
  if (reply.text) parts.push({ text: reply.text })
  for (const c of reply.toolCalls ?? []) parts.push({ functionCall: { name: c.name, args: c.args ?? {} } })
  if (parts.length === 0) parts.push({ text: 'done' })
  const response = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: 'gemini-2.5-flash',
  }
  if (stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    res.end(`data: ${JSON.stringify(response)}\r\n\r\n`)
    return
  }
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify(response))
}
