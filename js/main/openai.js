// openai.js — OpenAI's Chat Completions shape over a loaded model, and a fetch() handler for
// /v1/chat/completions, /v1/embeddings and /v1/models, so that the official `openai` client (or
// any code written against an OpenAI-compatible server) runs against the model in the page:
//
//   const client = new OpenAI({ apiKey: 'local', baseURL: 'http://oxinfer.local/v1', fetch: model.fetch });
//
// Requests are validated here (a wrong field is an OxError RANGE naming it); the conversation
// is rendered by the model's chat template with the tools declared; the model's text is read
// back with the Gemma 4 tool-call parser (toolcalls.js). tool_choice 'required' or a named
// function starts the model's turn with `<|tool_call>call:` (and the name), and a grammar
// (grammar option of the engine) keeps the call's syntax; response_format json_object /
// json_schema constrain the whole answer with a grammar made from the schema.
import { OxError } from '../shared/errors.js';
import { TurnStream, parseTurn } from '../shared/toolcalls.js';
import { imageOfPart, splitImages } from './image_input.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);
const KNOWN = new Set([
  'model',
  'messages',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'seed',
  'n',
  'logprobs',
  'top_logprobs',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'user',
  'store',
  'metadata',
  // extras of this engine (llama.cpp's server names where it has them)
  'top_k',
  'min_p',
  'repeat_penalty',
  'repetition_penalty',
  'penalty_window',
  'thinking',
  'reasoning_effort',
  'speculative',
  'grammar',
  'signal',
  'max_image_tokens',
]);

const bad = (msg) => new OxError('RANGE', `createChatCompletion: ${msg}`);
const randomId = (prefix) => `${prefix}${Math.random().toString(36).slice(2, 10)}${Date.now().toString(36)}`;

// content parts stay an array, as Hugging Face's apply_chat_template passes them; an image
// ({type: 'image_url', image_url: {url}}: a data: URL, a URL the page can fetch, a Blob; or
// {type: 'image', image}) goes on as {type: 'image', image} (js/main/image_input.js reads it)
function contentParts(parts, where) {
  return parts.map((p, k) => {
    if (p?.type === 'text' && typeof p.text === 'string') return { type: 'text', text: p.text };
    if (p?.type === 'image_url' || p?.type === 'image')
      return { type: 'image', image: imageOfPart(p, `${where}.content[${k}]`) };
    throw bad(`${where}.content[${k}]: type ${JSON.stringify(p?.type)} is not supported (text and image parts)`);
  });
}

// OpenAI messages -> the template's messages (Hugging Face conventions: tool_calls with
// arguments as objects, role 'tool' with tool_call_id; content arrays stay arrays).
function templateMessages(messages) {
  if (!Array.isArray(messages) || !messages.length) throw bad('messages must be a non-empty array');
  return messages.map((m, i) => {
    const where = `messages[${i}]`;
    if (!m || typeof m !== 'object') throw bad(`${where} must be an object`);
    if (!ROLES.has(m.role)) throw bad(`${where}.role ${JSON.stringify(m.role)} is not one of ${[...ROLES].join(', ')}`);
    const out = { role: m.role === 'developer' ? 'system' : m.role };
    const c = m.content;
    if (typeof c === 'string') out.content = c;
    else if (Array.isArray(c)) out.content = contentParts(c, where);
    else if (c == null && m.role === 'assistant') out.content = '';
    else throw bad(`${where}.content must be a string or an array of content parts`);
    if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string') throw bad(`${where}.tool_call_id must be a string`);
      out.tool_call_id = m.tool_call_id;
      if (Array.isArray(out.content)) {
        if (out.content.some((p) => p.type !== 'text'))
          throw bad(`${where}.content: a tool result takes text parts only`);
        out.content = out.content.map((p) => p.text).join('');
      }
      if (m.name !== undefined) out.name = String(m.name);
    }
    if (m.tool_calls !== undefined) {
      if (m.role !== 'assistant' || !Array.isArray(m.tool_calls))
        throw bad(`${where}.tool_calls: only an assistant message has tool_calls, as an array`);
      out.tool_calls = m.tool_calls.map((tc, k) => {
        const f = tc?.function;
        if (tc?.type !== undefined && tc.type !== 'function')
          throw bad(`${where}.tool_calls[${k}].type must be 'function'`);
        if (typeof f?.name !== 'string') throw bad(`${where}.tool_calls[${k}].function.name must be a string`);
        let args = f.arguments ?? '{}';
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args || '{}');
          } catch (e) {
            throw bad(`${where}.tool_calls[${k}].function.arguments is not JSON: ${e.message}`);
          }
        }
        return { id: tc.id, type: 'function', function: { name: f.name, arguments: args } };
      });
    }
    const thought = m.reasoning_content ?? m.reasoning;
    if (typeof thought === 'string' && m.role === 'assistant') out.reasoning_content = thought;
    return out;
  });
}

function checkTools(tools) {
  if (tools === undefined) return [];
  if (!Array.isArray(tools)) throw bad('tools must be an array');
  return tools.map((t, i) => {
    if (t?.type !== 'function' || typeof t.function?.name !== 'string' || !/^[\w.-]+$/.test(t.function.name))
      throw bad(
        `tools[${i}] must be {type: 'function', function: {name (letters, digits, _ . -), description?, parameters?}}`,
      );
    if (
      t.function.parameters !== undefined &&
      (typeof t.function.parameters !== 'object' || t.function.parameters === null)
    )
      throw bad(`tools[${i}].function.parameters must be a JSON schema object`);
    return t;
  });
}

// -> {mode: 'none'|'auto'|'required', name?}
function toolChoice(choice, tools) {
  if (choice === undefined) return { mode: tools.length ? 'auto' : 'none' };
  if (choice === 'none' || choice === 'auto' || choice === 'required') {
    if (choice !== 'none' && !tools.length) throw bad(`tool_choice '${choice}' needs tools`);
    return { mode: choice };
  }
  const name = choice?.function?.name;
  if (choice?.type === 'function' && typeof name === 'string') {
    if (!tools.some((t) => t.function.name === name))
      throw bad(`tool_choice names ${JSON.stringify(name)}, which is not in tools`);
    return { mode: 'required', name };
  }
  throw bad("tool_choice must be 'none', 'auto', 'required' or {type: 'function', function: {name}}");
}

function responseFormat(rf) {
  if (rf === undefined || rf?.type === 'text') return null;
  if (rf?.type === 'json_object') return { type: 'object' };
  if (rf?.type === 'json_schema') {
    const s = rf.json_schema?.schema;
    if (!s || typeof s !== 'object') throw bad('response_format.json_schema.schema must be a JSON schema object');
    return s;
  }
  throw bad("response_format.type must be 'text', 'json_object' or 'json_schema'");
}

const num = (v, name, lo, hi) => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi)
    throw bad(`${name} must be a number from ${lo} to ${hi}, not ${JSON.stringify(v)}`);
  return v;
};
const int = (v, name, lo, hi = Number.MAX_SAFE_INTEGER) => {
  const x = num(v, name, lo, hi);
  if (x !== undefined && !Number.isInteger(x)) throw bad(`${name} must be an integer, not ${v}`);
  return x;
};

/** The request -> everything the generation needs (throws OxError RANGE on any bad field);
 * grammarOf: the schema (or the tools of a forced call) the engine makes the grammar from. */
export function planRequest(info, request) {
  if (!request || typeof request !== 'object') throw bad('the request must be an object');
  for (const k of Object.keys(request)) if (!KNOWN.has(k)) throw bad(`unknown field ${JSON.stringify(k)}`);
  if (request.n !== undefined && request.n !== 1) throw bad('n must be 1 (one choice per request)');
  if (request.stream != null && typeof request.stream !== 'boolean')
    throw bad(`stream must be true or false, not ${JSON.stringify(request.stream)}`);
  if (
    request.stream_options != null &&
    (typeof request.stream_options !== 'object' || Array.isArray(request.stream_options))
  )
    throw bad('stream_options must be an object {include_usage}');
  const tools = checkTools(request.tools);
  const choice = toolChoice(request.tool_choice, tools);
  const schema = responseFormat(request.response_format);
  if (schema && choice.mode === 'required') throw bad('response_format and a required tool call cannot be combined');
  const logprobs = request.logprobs === true;
  const topLogprobs = int(request.top_logprobs, 'top_logprobs', 0, 20);
  if (topLogprobs !== undefined && !logprobs) throw bad('top_logprobs needs logprobs: true');
  let stop = request.stop;
  if (stop !== undefined && stop !== null) {
    stop = typeof stop === 'string' ? [stop] : stop;
    if (!Array.isArray(stop) || stop.length > 16 || !stop.every((s) => typeof s === 'string'))
      throw bad('stop must be a string or an array of at most 16 strings');
  }
  const logitBias = request.logit_bias;
  if (logitBias !== undefined && (typeof logitBias !== 'object' || logitBias === null))
    throw bad('logit_bias must be an object {token id: bias}');
  const opts = {
    maxTokens: int(request.max_completion_tokens ?? request.max_tokens, 'max_completion_tokens', 0) ?? 2048,
    temperature: num(request.temperature, 'temperature', 0, 2),
    topP: num(request.top_p, 'top_p', 0, 1),
    topK: int(request.top_k, 'top_k', 0),
    minP: num(request.min_p, 'min_p', 0, 1),
    frequencyPenalty: num(request.frequency_penalty, 'frequency_penalty', -2, 2),
    presencePenalty: num(request.presence_penalty, 'presence_penalty', -2, 2),
    repetitionPenalty: num(request.repetition_penalty ?? request.repeat_penalty, 'repetition_penalty', 0, 10),
    penaltyWindow: int(request.penalty_window, 'penalty_window', 0),
    seed: int(request.seed, 'seed', 0),
    stop: stop ?? undefined,
    logitBias: logitBias ? Object.fromEntries(Object.entries(logitBias).map(([k, v]) => [Number(k), v])) : undefined,
    speculative: request.speculative,
    signal: request.signal,
    maxImageTokens: request.max_image_tokens,
  };
  for (const k of Object.keys(opts)) if (opts[k] === undefined) delete opts[k];
  if (logprobs) opts.logprobs = topLogprobs ?? 0;
  const thinking = request.thinking ?? (request.reasoning_effort !== undefined && request.reasoning_effort !== 'none');
  // The model's turn: forced into a tool call, constrained to a schema, or free.
  let prefix = '';
  let grammarOf = null;
  if (choice.mode === 'required') {
    prefix = '<|tool_call>call:' + (choice.name ? choice.name : '');
    grammarOf = {
      schema: tools.filter((t) => !choice.name || t.function.name === choice.name),
      opts: { toolCalls: true, afterName: !!choice.name, parallel: request.parallel_tool_calls !== false },
    };
  } else if (schema) {
    grammarOf = { schema, opts: {} };
  } else if (request.grammar !== undefined) {
    if (typeof request.grammar !== 'string') throw bad('grammar must be a GBNF string');
    opts.grammar = request.grammar;
  }
  return {
    messages: templateMessages(request.messages),
    tools: choice.mode === 'none' && request.tool_choice === undefined ? undefined : tools.length ? tools : undefined,
    parseTools: choice.mode !== 'none',
    thinking: !!thinking,
    prefix,
    opts,
    grammarOf,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    modelName: typeof request.model === 'string' ? request.model : info.name || 'oxinfer',
  };
}

// The model's turn as tokens: render, extend with the forced prefix, generate with control
// tokens shown (the parser needs them).
async function* turnEvents(model, plan) {
  const prompt = (await model.renderChat(plan.messages, { tools: plan.tools, thinking: plan.thinking })) + plan.prefix;
  const { eosIds, turnEnd } = model.info;
  const stopIds = turnEnd >= 0 && !eosIds.includes(turnEnd) ? [...eosIds, turnEnd] : eosIds;
  // the images, one per <|image|> marker the template wrote, in order
  const { images } = await splitImages(plan.messages, { read: false });
  yield* model.generate(prompt, {
    ...plan.opts,
    stopIds,
    includeSpecial: true,
    ...(images.length ? { images } : {}),
  });
}

// The generation stopped at max_tokens or the context's end: the turn is read as cut (a call
// cut short stays a partial tool call, never raw markup in content) and finishes 'length'.
const cutShort = (stats) => stats?.reason === 'length' || stats?.reason === 'context';

function finishReason(stats, turn) {
  if (cutShort(stats)) return 'length';
  return turn.toolCalls.length ? 'tool_calls' : 'stop';
}

const usageOf = (st) => ({
  prompt_tokens: st.promptTokens,
  completion_tokens: st.generatedTokens,
  total_tokens: st.promptTokens + st.generatedTokens,
});

function logprobEntry(ev) {
  if (ev.logprob === undefined) return null;
  return {
    token: ev.text,
    logprob: ev.logprob,
    bytes: [...new TextEncoder().encode(ev.text)],
    top_logprobs: (ev.topLogprobs ?? []).map((t) => ({
      token: t.text,
      logprob: t.logprob,
      bytes: [...new TextEncoder().encode(t.text)],
    })),
  };
}

/**
 * One chat completion, OpenAI-shaped. With `stream: true` resolves to an async iterable of
 * `chat.completion.chunk` objects.
 * @param {object} model a loaded model (index.js)
 * @param {object} request
 */
export async function createChatCompletion(model, request) {
  const plan = planRequest(model.info, request);
  if (plan.grammarOf) plan.opts.grammar = await model.jsonSchemaGrammar(plan.grammarOf.schema, plan.grammarOf.opts);
  const id = randomId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const base = { id, created, model: plan.modelName };
  if (plan.stream) return streamCompletion(model, plan, base);
  let text = plan.prefix;
  let stats = null;
  const logprobs = [];
  for await (const ev of turnEvents(model, plan)) {
    if (ev.stats) stats = ev.stats;
    else {
      text += ev.text;
      const lp = logprobEntry(ev);
      if (lp) logprobs.push(lp);
    }
  }
  const turn = parseTurn(text, { tools: plan.parseTools, partial: cutShort(stats) });
  const message = { role: 'assistant', content: turn.toolCalls.length && !turn.content ? null : turn.content };
  if (turn.reasoning) message.reasoning_content = turn.reasoning;
  if (turn.toolCalls.length)
    message.tool_calls = turn.toolCalls.map((c) => ({
      id: randomId('call_'),
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  return {
    ...base,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message,
        logprobs: plan.opts.logprobs !== undefined ? { content: logprobs } : null,
        finish_reason: finishReason(stats, turn),
      },
    ],
    usage: usageOf(stats),
  };
}

async function* streamCompletion(model, plan, base) {
  const chunk = (delta, finish = null, extra = {}) => ({
    ...base,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...extra }],
  });
  const parser = new TurnStream({ tools: plan.parseTools });
  const callIds = [];
  const toDelta = (d) => {
    if (d.content !== undefined) return { content: d.content };
    if (d.reasoning !== undefined) return { reasoning_content: d.reasoning };
    const tc = d.toolCall;
    const out = { index: tc.index, function: { arguments: tc.arguments } };
    if (tc.name) {
      callIds[tc.index] = randomId('call_');
      Object.assign(out, { id: callIds[tc.index], type: 'function' });
      out.function = { name: tc.name, arguments: tc.arguments };
    }
    return { tool_calls: [out] };
  };
  yield chunk({ role: 'assistant', content: '' });
  let stats = null;
  let pending = plan.prefix;
  for await (const ev of turnEvents(model, plan)) {
    if (ev.stats) {
      stats = ev.stats;
      continue;
    }
    const deltas = parser.push(pending + ev.text);
    pending = '';
    const lp = plan.opts.logprobs !== undefined ? logprobEntry(ev) : null;
    for (const d of deltas) {
      yield chunk(toDelta(d), null, lp ? { logprobs: { content: [lp] } } : {});
    }
  }
  const { deltas, turn } = parser.end({ cut: cutShort(stats) });
  for (const d of deltas) yield chunk(toDelta(d));
  yield chunk({}, finishReason(stats, turn));
  if (plan.includeUsage) yield { ...base, object: 'chat.completion.chunk', choices: [], usage: usageOf(stats) };
}

// ---- fetch ----

const STATUS = { RANGE: 400, FORMAT: 400, UNSUPPORTED: 400, STATE: 409, ABORTED: 499, NOMEM: 507 };

function errorResponse(e) {
  const code = e?.code ?? 'STATE';
  const body = {
    error: {
      message: e?.message ?? String(e),
      type: code === 'RANGE' || code === 'UNSUPPORTED' ? 'invalid_request_error' : 'server_error',
      code,
    },
  };
  return new Response(JSON.stringify(body), {
    status: STATUS[code] ?? 500,
    headers: { 'content-type': 'application/json' },
  });
}

const ROUTES = { '/chat/completions': 'POST', '/embeddings': 'POST', '/models': 'GET' };
const ROUTE_LIST = Object.entries(ROUTES)
  .map(([r, m]) => `${m} /v1${r}`)
  .join(', ');

function routeError(status, message) {
  const body = {
    error: { message, type: 'invalid_request_error', code: status === 404 ? 'not_found' : 'method_not_allowed' },
  };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

const json = (v) => new Response(JSON.stringify(v), { headers: { 'content-type': 'application/json' } });

function sse(iterable) {
  const enc = new TextEncoder();
  const it = iterable[Symbol.asyncIterator]();
  return new Response(
    new ReadableStream({
      async pull(ctl) {
        try {
          const { value, done } = await it.next();
          if (done) {
            ctl.enqueue(enc.encode('data: [DONE]\n\n'));
            ctl.close();
          } else ctl.enqueue(enc.encode(`data: ${JSON.stringify(value)}\n\n`));
        } catch (e) {
          ctl.enqueue(
            enc.encode(`data: ${JSON.stringify({ error: { message: e.message, code: e.code ?? 'STATE' } })}\n\n`),
          );
          ctl.close();
        }
      },
      cancel() {
        it.return?.();
      },
    }),
    { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } },
  );
}

/**
 * A fetch()-compatible function serving the OpenAI REST routes from this model.
 * @param {object} model
 * @returns {(input: RequestInfo | URL, init?: RequestInit) => Promise<Response>}
 */
export function createFetchHandler(model) {
  return async (input, init) => {
    const req = input instanceof Request && !init ? input : new Request(input, init);
    const path = new URL(req.url).pathname.replace(/\/+$/, '');
    try {
      const route = Object.keys(ROUTES).find((r) => path.endsWith(r));
      // an unknown route is 404 and a known one with another method 405, as an HTTP server answers
      if (!route) return routeError(404, `${req.method} ${path}: not a route of this model (${ROUTE_LIST})`);
      if (req.method !== ROUTES[route])
        return routeError(405, `${req.method} ${path}: this route takes ${ROUTES[route]} (${ROUTE_LIST})`);
      if (route === '/models') {
        return json({
          object: 'list',
          data: [{ id: model.info.name || 'oxinfer', object: 'model', created: 0, owned_by: 'oxinfer-web' }],
        });
      }
      let body;
      try {
        body = await req.json();
      } catch (e) {
        throw new OxError('RANGE', `${path}: the body is not JSON (${e.message})`);
      }
      if (route === '/chat/completions') {
        const res = await createChatCompletion(model, { ...body, signal: req.signal });
        return body.stream ? sse(res) : json(res);
      }
      if (typeof model.createEmbedding !== 'function')
        throw new OxError('UNSUPPORTED', 'embeddings are not available in this build');
      return json(await model.createEmbedding(body));
    } catch (e) {
      return errorResponse(e);
    }
  };
}
