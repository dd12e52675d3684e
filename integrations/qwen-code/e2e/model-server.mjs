// A scripted OpenAI-compatible model server for driving the real Qwen Code CLI headless.
// Loopback only, bounded (request bodies, number of requests, reply waits), streaming and
// non-streaming /v1/chat/completions. Each request is answered by `script(request, ctx)`, which
// returns (or resolves to) `{ text }` or `{ toolCalls: [{ name, arguments }] }`; every request body
// is recorded in `server.requests`.
import http from 'node:http'

const MAX_BODY_BYTES = 32 * 1024 * 1024
const MAX_REQUESTS = 200

let callSeq = 0

/** The text of every message of a request, in order: [{ role, text }]. */
export function messageTexts(body) {
  const out = []
  for (const m of body.messages ?? []) {
    let text = ''
    if (typeof m.content === 'string') text = m.content
    else if (Array.isArray(m.content)) text = m.content.map((p) => (typeof p === 'string' ? p : (p.text ?? ''))).join('')
    out.push({ role: m.role, text, toolCalls: m.tool_calls, toolCallId: m.tool_call_id })
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
    if (req.method === 'GET' && /\/models$/.test(req.url)) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'test' }] }))
      return
    }
    if (req.method !== 'POST' || !/\/chat\/completions$/.test(req.url)) {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `not scripted: ${req.method} ${req.url}` } }))
      return
    }
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
      if (requests.length >= MAX_REQUESTS) {
        res.writeHead(429, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: 'request limit of the scripted model reached' } }))
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
          Promise.resolve(script(body, { index, requests })),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`script reply ${index} timed out`)), replyTimeoutMs)
          }),
        ]).finally(() => clearTimeout(timer))
      } catch (err) {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: String(err && err.message) } }))
        return
      }
      send(res, body, reply ?? { text: 'done' })
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}/v1`,
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

function send(res, body, reply) {
  const id = `chatcmpl-${++callSeq}`
  const created = Math.floor(Date.now() / 1000)
  const model = body.model ?? 'scripted'
  const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
    index: i,
    id: `call_${callSeq}_${i}`,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.arguments ?? {}) },
  }))
  const finish = toolCalls.length ? 'tool_calls' : 'stop'
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
  if (body.stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    const chunk = (delta, finish_reason = null, extra = {}) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`)
    chunk({ role: 'assistant', content: reply.text ?? '' })
    if (toolCalls.length) chunk({ tool_calls: toolCalls })
    chunk({}, finish)
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`)
    res.end('data: [DONE]\n\n')
    return
  }
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(
    JSON.stringify({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.text ?? null, ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index, ...t }) => t) } : {}) },
          finish_reason: finish,
        },
      ],
      usage,
    }),
  )
}
