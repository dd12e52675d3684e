// A scripted OpenAI-compatible model server for driving the real Qwen Code CLI headless, on the
// integrations' shared skeleton (../../kit/scripted-server.mjs): streaming and non-streaming
// /v1/chat/completions. Each request is answered by `script(request, ctx)`, which
// returns (or resolves to) `{ text }` or `{ toolCalls: [{ name, arguments }] }`; every request body
// is recorded in `server.requests`.
import { json, startScriptedServer } from '../../kit/scripted-server.mjs'

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
  const error = (res, status, message) => json(res, status, { error: { message } })
  const server = await startScriptedServer(
    script,
    {
      route(req) {
        if (req.method === 'GET' && /\/models$/.test(req.url)) {
          return { immediate: (res) => json(res, 200, { object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'test' }] }) }
        }
        return req.method === 'POST' && /\/chat\/completions$/.test(req.url) ? {} : undefined
      },
      notFound: (res, req) => error(res, 404, `not scripted: ${req.method} ${req.url}`),
      limitReached: (res) => error(res, 429, 'request limit of the scripted model reached'),
      failed: (res, message) => error(res, 500, message),
      send: (res, body, reply) => send(res, body, reply ?? { text: 'done' }),
    },
    { replyTimeoutMs },
  )
  return { ...server, url: `http://127.0.0.1:${server.port}/v1` }
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
