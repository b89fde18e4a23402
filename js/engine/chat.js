// chat.js — messages -> prompt text. The checkpoint's own template (GGUF
// tokenizer.chat_template, chat_template.jinja or tokenizer_config.json) is rendered with
// @huggingface/jinja; without one, the built-in Gemma 4 format (docs/gemma4.md):
//
//   <bos><|turn>system\n{<|think|> when thinking}{system}<turn|>\n
//   <|turn>user\n{text}<turn|>\n
//   <|turn>model\n{answer, thought channel stripped}<turn|>\n
//   ...
//   <|turn>model\n                       (generation prompt)
//
// Roles: system (first message only), user, assistant|model. Content is a string or an array
// of parts; as Hugging Face's apply_chat_template does, a template sees the array itself
// (each part {type: 'text', text}; a bare string part becomes one), and the built-in format
// joins the parts' text. Text parts only. Runs in the engine worker (js/engine/worker.js).
import { OxError } from '../shared/errors.js';
import { formatCall, formatDeclaration, formatResponse } from '../shared/toolcalls.js';

// content: a string, or an array of text parts (normalized to {type: 'text', text})
function contentOf(m, i) {
  const c = m.content;
  if (typeof c === 'string') return c;
  if (c == null) return '';
  if (Array.isArray(c)) {
    return c.map((p) => {
      if (typeof p === 'string') return { type: 'text', text: p };
      if (p?.type === 'text' && typeof p.text === 'string') return p;
      throw new OxError('RANGE', `message ${i}: content part ${JSON.stringify(p?.type ?? p)} is not supported (text parts only)`);
    });
  }
  throw new OxError('RANGE', `message ${i}: content must be a string or an array of text parts`);
}

const textOf = (content) => (typeof content === 'string' ? content : content.map((p) => p.text).join(''));

// messages: a non-empty array of {role: string, content}
function normalize(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw new OxError('RANGE', 'messages must be a non-empty array');
  return messages.map((m, i) => {
    if (!m || typeof m !== 'object' || Array.isArray(m)) throw new OxError('RANGE', `message ${i} must be an object {role, content}`);
    if (typeof m.role !== 'string') throw new OxError('RANGE', `message ${i}: role must be a string`);
    return { ...m, content: contentOf(m, i) };
  });
}

const stripThought = (s) => s.replace(/<\|channel>[\s\S]*?<channel\|>/g, '');

// The built-in Gemma 4 format. Tools as the checkpoints' template writes them
// (js/shared/toolcalls.js): declarations in the system turn; an assistant message's tool_calls, then
// the results of the role 'tool' messages after it, in the same model turn, which stays open
// for the model to go on after the results.
export function gemma4Prompt(messages, { thinking = false, addGenerationPrompt = true, tools } = {}) {
  const msgs = normalize(messages);
  let out = '<bos>';
  const sys = msgs[0].role === 'system' ? textOf(msgs[0].content).trim() : null;
  const declared = Array.isArray(tools) && tools.length ? tools.map(formatDeclaration).join('') : '';
  if (sys !== null || thinking || declared) out += `<|turn>system\n${thinking ? '<|think|>' : ''}${sys ?? ''}${declared}<turn|>\n`;
  let lastUser = -1;
  msgs.forEach((m, i) => m.role === 'user' && (lastUser = i));
  let state = null; // what the last message ended with: null, 'tool_call' or 'tool_response'
  let prevRole = null; // the last message's role that was not 'tool'
  let calls = null; // the tool_calls of the last assistant message, which its tool results answer
  for (let i = sys !== null ? 1 : 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role === 'tool') {
      if (!calls) throw new OxError('RANGE', `message ${i}: a tool result must follow an assistant message with tool_calls`);
      continue; // written with the calls it answers
    }
    let role = m.role;
    if (role === 'system') throw new OxError('RANGE', `message ${i}: a system message must come first`);
    if (role === 'assistant') role = 'model';
    if (role !== 'user' && role !== 'model') throw new OxError('RANGE', `message ${i}: unknown role ${JSON.stringify(m.role)} (system, user, assistant, model or tool)`);
    if (!(role === 'model' && prevRole === 'assistant')) out += `<|turn>${role}\n`;
    prevRole = m.role;
    calls = Array.isArray(m.tool_calls) && m.tool_calls.length ? m.tool_calls : null;
    state = null;
    let answered = false;
    if (Array.isArray(m.tool_calls) && m.tool_calls.length) {
      const thought = m.reasoning_content ?? m.reasoning;
      if (thought && i > lastUser) out += `<|channel>thought\n${thought}\n<channel|>`;
      for (const c of m.tool_calls) out += formatCall(c.function ?? c);
      state = 'tool_call';
      for (let k = i + 1; k < msgs.length && msgs[k].role === 'tool'; k++) {
        const r = msgs[k];
        const call = m.tool_calls.find((c) => c.id !== undefined && c.id === r.tool_call_id);
        out += formatResponse(call ? (call.function ?? call).name : r.name ?? 'unknown', textOf(r.content));
        answered = true;
        state = 'tool_response';
      }
    }
    const text = textOf(m.content);
    out += (role === 'model' ? stripThought(text) : text).trim();
    if (state === 'tool_call' && !answered) out += '<|tool_response>';
    else if (!(answered && !text)) out += '<turn|>\n';
  }
  if (addGenerationPrompt && state !== 'tool_call' && state !== 'tool_response') out += '<|turn>model\n';
  return out;
}

// A template comes from the model file and renders on the engine's thread: its work is
// bounded, so a hostile one fails with FORMAT instead of hanging the worker or taking the
// process down (V8 aborts on a 10^9-element array rather than throw). Limits: steps per
// render (an evaluated node, a loop body run, an element made by range(): ~5 us each; the
// Gemma 4 template takes ~60 per message), elements of one range(), length of any string or
// list value.
const STEP_MAX = 1_000_000;
const RANGE_MAX = 1 << 16;
const STRING_MAX = 1 << 24;
const LIST_MAX = 1 << 20;

let jinja = null; // @huggingface/jinja, loaded on first use
let jinjaUrl = null; // where the page's import map puts it (setJinjaUrl)

// A bundler or Node resolves the bare specifier; an unbundled page's module worker does not
// (import maps do not apply to workers), so the main thread resolves it and tells us.
export function setJinjaUrl(url) {
  jinjaUrl = url;
}

async function loadJinja() {
  try {
    return await import('@huggingface/jinja');
  } catch (e) {
    if (!jinjaUrl) throw new OxError('MISSING', `chat template: cannot load @huggingface/jinja (${e.message})`);
    return import(/* @vite-ignore */ jinjaUrl);
  }
}
let Bounded = null; // its Interpreter, bounded (below)
const compiled = new Map(); // template source -> parsed Template

function boundedInterpreter() {
  Bounded ??= class extends jinja.Interpreter {
    steps = 0;
    step(n = 1) {
      if ((this.steps += n) > STEP_MAX) throw new OxError('FORMAT', `chat template: more than ${STEP_MAX} steps`);
    }
    // a loop's body runs through evaluateBlock, even when empty
    evaluateBlock(statements, env) {
      this.step();
      return super.evaluateBlock(statements, env);
    }
    evaluate(statement, env) {
      this.step();
      const v = super.evaluate(statement, env);
      const x = v?.value;
      if (typeof x === 'string' ? x.length > STRING_MAX : Array.isArray(x) && x.length > LIST_MAX)
        throw new OxError('FORMAT', `chat template: a ${typeof x === 'string' ? 'string' : 'list'} of ${x.length} elements (at most ${typeof x === 'string' ? STRING_MAX : LIST_MAX})`);
      return v;
    }
  };
  return Bounded;
}

// Template globals as @huggingface/jinja sets them, with a bounded range().

// range() of at most RANGE_MAX elements, each counted as a step of `it`
function boundedRange(it) {
  return (start, stop, step = 1) => {
    if (stop === undefined) [start, stop] = [0, start];
    if (![start, stop, step].every(Number.isInteger) || step === 0) throw new OxError('FORMAT', 'chat template: range() needs integers and a non-zero step');
    const n = Math.max(0, Math.ceil((stop - start) / step));
    if (n > RANGE_MAX) throw new OxError('FORMAT', `chat template: range() of ${n} elements (at most ${RANGE_MAX})`);
    it.step(n);
    return Array.from({ length: n }, (_, i) => start + i * step);
  };
}

function strftimeNow(format) {
  const d = new Date();
  const pad = (n) => String(n).padStart(2, '0');
  const month = (style) => new Intl.DateTimeFormat('en-US', { month: style }).format(d);
  return String(format).replace(/%[YmdbBHM%]/g, (t) => ({
    '%Y': String(d.getFullYear()), '%m': pad(d.getMonth() + 1), '%d': pad(d.getDate()), '%b': month('short'),
    '%B': month('long'), '%H': pad(d.getHours()), '%M': pad(d.getMinutes()), '%%': '%',
  })[t]);
}

function environment(it, vars) {
  const env = new jinja.Environment();
  const globals = {
    false: false, true: true, none: null, False: false, True: true, None: null,
    raise_exception: (msg) => {
      throw new OxError('FORMAT', `chat template: ${msg}`);
    },
    range: boundedRange(it),
    strftime_now: strftimeNow,
  };
  for (const [k, v] of Object.entries({ ...globals, ...vars })) env.set(k, v);
  return env;
}

// Render `template` (Jinja source, or null for the built-in format).
// opts: thinking, addGenerationPrompt (default true), tools, bosToken ('<bos>'),
// eosToken ('<eos>'), vars (extra template variables).
export async function renderChat(template, messages, opts = {}) {
  if (!template) return gemma4Prompt(messages, opts);
  const msgs = normalize(messages);
  jinja ??= await loadJinja();
  let t = compiled.get(template);
  if (!t) {
    try {
      t = new jinja.Template(template);
    } catch (e) {
      throw new OxError('FORMAT', `chat template: ${e.message}`);
    }
    compiled.set(template, t);
  }
  try {
    const it = new (boundedInterpreter())();
    it.global = environment(it, {
      ...(opts.vars ?? {}),
      messages: msgs,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: opts.bosToken ?? '<bos>',
      eos_token: opts.eosToken ?? '<eos>',
      enable_thinking: !!opts.thinking,
      tools: opts.tools,
    });
    const out = it.run(t.parsed).value;
    if (typeof out !== 'string') throw new Error('the template did not produce text');
    return out;
  } catch (e) {
    if (e instanceof OxError) throw e;
    throw new OxError('FORMAT', `chat template: ${e.message}`);
  }
}
