// A scripted Generative Language API server for driving the real Gemini CLI offline (headless or in
// its UI), on the integrations' shared skeleton (../../kit/scripted-server.mjs). Answers
// `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` with server-sent events and
// `:generateContent` with JSON; `:countTokens` with a fixed count. Each generate request is answered
// by `script(request, ctx)`, which returns (or resolves to) `{ text }` or
// `{ toolCalls: [{ name, args }] }`; every request body is recorded in `server.requests`.
import { json, startScriptedServer } from '../../kit/scripted-server.mjs'

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
  const error = (res, code, status, message) => json(res, code, { error: { code, message, status } })
  const server = await startScriptedServer(
    (body, ctx) => script(body, { ...ctx, model: ctx.route.model }),
    {
      route(req) {
        const m = /^\/v1beta\/models\/([^/:?]+):(streamGenerateContent|generateContent|countTokens)(\?.*)?$/.exec(req.url)
        if (req.method !== 'POST' || !m) return undefined
        if (m[2] === 'countTokens') return { immediate: (res) => json(res, 200, { totalTokens: 10 }) }
        return { model: m[1], stream: m[2] === 'streamGenerateContent' }
      },
      notFound: (res, req) => error(res, 404, 'NOT_FOUND', `not scripted: ${req.method} ${req.url}`),
      limitReached: (res) => error(res, 429, 'RESOURCE_EXHAUSTED', 'request limit of the scripted model reached'),
      failed: (res, message) => error(res, 500, 'INTERNAL', message),
      send: (res, _body, reply, route) => send(res, route.stream, reply ?? { text: 'done' }),
    },
    { replyTimeoutMs },
  )
  return { ...server, url: `http://127.0.0.1:${server.port}` }
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
