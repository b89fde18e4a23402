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
// joins the parts' text. An image part reaches here as a bare {type: 'image'} (its image went
// to js/engine/vision.js); a template writes its marker (Gemma 4's: `<|image|>`), and so does
// the built-in format, in place. Runs in the engine worker (js/engine/worker.js).
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
      if (p?.type === 'image') return { type: 'image' };
      throw new OxError(
        'RANGE',
        `message ${i}: content part ${JSON.stringify(p?.type ?? p)} is not supported (text and image parts only)`,
      );
    });
  }
  throw new OxError('RANGE', `message ${i}: content must be a string or an array of text and image parts`);
}

// Gemma 4's image marker, which js/engine/vision.js expands
const IMAGE_MARKER = '<|image|>';
const textOf = (content) =>
  typeof content === 'string' ? content : content.map((p) => (p.type === 'image' ? IMAGE_MARKER : p.text)).join('');

// messages: a non-empty array of {role: string, content}
function normalize(messages) {
  if (!Array.isArray(messages) || messages.length === 0)
    throw new OxError('RANGE', 'messages must be a non-empty array');
  return messages.map((m, i) => {
    if (!m || typeof m !== 'object' || Array.isArray(m))
      throw new OxError('RANGE', `message ${i} must be an object {role, content}`);
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
  if (sys !== null || thinking || declared)
    out += `<|turn>system\n${thinking ? '<|think|>' : ''}${sys ?? ''}${declared}<turn|>\n`;
  let lastUser = -1;
  msgs.forEach((m, i) => m.role === 'user' && (lastUser = i));
  let state = null; // what the last message ended with: null, 'tool_call' or 'tool_response'
  let prevRole = null; // the last message's role that was not 'tool'
  let calls = null; // the tool_calls of the last assistant message, which its tool results answer
  for (let i = sys !== null ? 1 : 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role === 'tool') {
      if (!calls)
        throw new OxError('RANGE', `message ${i}: a tool result must follow an assistant message with tool_calls`);
      continue; // written with the calls it answers
    }
    let role = m.role;
    if (role === 'system') throw new OxError('RANGE', `message ${i}: a system message must come first`);
    if (role === 'assistant') role = 'model';
    if (role !== 'user' && role !== 'model')
      throw new OxError(
        'RANGE',
        `message ${i}: unknown role ${JSON.stringify(m.role)} (system, user, assistant, model or tool)`,
      );
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
        out += formatResponse(call ? (call.function ?? call).name : (r.name ?? 'unknown'), textOf(r.content));
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

// A value already evaluated, put back into a node so that the library's own operation runs on
// it (after the size checks) without evaluating its operands twice.
const HELD = 'OxHeldValue';
const held = (value) => ({ type: HELD, value });
const heldArgs = (args, kwargs) => [
  ...args.map(held),
  ...[...kwargs].map(([k, v]) => ({ type: 'KeywordArgumentExpression', key: { value: k }, value: held(v) })),
];

// An upper bound of a value's text (as tojson / string / `~` write it), with `indent` spaces per
// level; counting stops past `limit`.
function textSize(v, limit, indent = 0, depth = 0) {
  const x = v?.value;
  if (typeof x === 'string') return x.length + 2;
  const items = Array.isArray(x) ? x : x instanceof Map ? [...x.values()] : null;
  if (!items) return 24;
  let n = 2 + (x instanceof Map ? [...x.keys()].reduce((a, k) => a + k.length + 4, 0) : 0);
  for (const item of items) {
    n += 16 + indent * (depth + 1) + textSize(item, limit, indent, depth + 1);
    if (n > limit) break;
  }
  return n;
}

// How many times `needle` occurs in s, counting up to `cap`.
function occurrences(s, needle, cap) {
  if (!needle) return s.length + 1;
  let n = 0;
  for (let i = s.indexOf(needle); i >= 0 && n <= cap; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}

// How many whitespace-separated words s has, counting up to `cap`.
function words(s, cap) {
  const re = /\S+/g;
  let n = 0;
  while (n <= cap && re.exec(s)) n++;
  return n;
}

function boundedInterpreter() {
  Bounded ??= class extends jinja.Interpreter {
    steps = 0;
    step(n = 1) {
      if ((this.steps += n) > STEP_MAX) throw new OxError('FORMAT', `chat template: more than ${STEP_MAX} steps`);
    }
    // the limits are checked before an operation builds its value, from its operands' sizes
    fits(kind, n, what) {
      const max = kind === 'string' ? STRING_MAX : LIST_MAX;
      if (n > max)
        throw new OxError(
          'FORMAT',
          `chat template: ${what} would make a ${kind} of ${n} ${kind === 'string' ? 'characters' : 'elements'} (at most ${max})`,
        );
    }
    evaluateBinaryExpression(node, env) {
      const op = node.operator.value;
      if (op !== '+' && op !== '~') return super.evaluateBinaryExpression(node, env);
      const left = this.evaluate(node.left, env);
      const right = this.evaluate(node.right, env);
      if (op === '+' && Array.isArray(left.value) && Array.isArray(right.value))
        this.fits('list', left.value.length + right.value.length, `'${op}'`);
      else this.fits('string', textSize(left, STRING_MAX) + textSize(right, STRING_MAX) - 4, `'${op}'`);
      return super.evaluateBinaryExpression({ ...node, left: held(left), right: held(right) }, env);
    }
    // filters: join, indent, replace, tojson, string
    applyFilter(operand, filterNode, env) {
      const call = filterNode.type === 'CallExpression';
      const [args, kwargs] = call ? this.evaluateArguments(filterNode.args, env) : [[], new Map()];
      const name = call ? filterNode.callee.value : filterNode.value;
      const arg = (k, key) => (args[k] ?? kwargs.get(key))?.value;
      const x = operand.value;
      if (name === 'join' && (typeof x === 'string' || Array.isArray(x))) {
        const n = typeof x === 'string' ? x.length : x.length;
        if (typeof x === 'string') this.fits('list', n, 'join');
        const sep = String(arg(0, 'separator') ?? '').length;
        const items =
          typeof x === 'string'
            ? n
            : x.reduce((a, item) => (a > STRING_MAX ? a : a + textSize(item, STRING_MAX) - 2), 0);
        this.fits('string', items + sep * Math.max(0, n - 1), 'join');
      } else if (name === 'indent' && typeof x === 'string') {
        const width = Number(arg(0, 'width') ?? 4);
        this.fits('string', x.length + (occurrences(x, '\n', STRING_MAX) + 1) * Math.max(0, width), 'indent');
      } else if (name === 'replace' && typeof x === 'string') {
        this.checkReplace(x, args, kwargs);
      } else if ((name === 'tojson' || name === 'string') && typeof x === 'object' && x !== null) {
        this.fits('string', textSize(operand, STRING_MAX, Math.max(0, Number(kwargs.get('indent')?.value ?? 0))), name);
      }
      return super.applyFilter(operand, call ? { ...filterNode, args: heldArgs(args, kwargs) } : filterNode, env);
    }
    // string methods that build large values: s.split(sep), s.replace(old, new)
    evaluateCallExpression(expr, env) {
      const c = expr.callee;
      const method =
        c?.type === 'MemberExpression' && !c.computed && c.property?.type === 'Identifier' ? c.property.value : null;
      if (method !== 'split' && method !== 'replace') return super.evaluateCallExpression(expr, env);
      const object = this.evaluate(c.object, env);
      const [args, kwargs] = this.evaluateArguments(expr.args, env);
      if (typeof object.value === 'string') {
        const s = object.value;
        if (method === 'replace') this.checkReplace(s, args, kwargs);
        else {
          const sep = args[0]?.value;
          const pieces = typeof sep === 'string' ? occurrences(s, sep, LIST_MAX) + 1 : words(s, LIST_MAX);
          const max = args[1]?.value;
          this.fits('list', Number.isInteger(max) && max >= 0 ? Math.min(pieces, max + 1) : pieces, 'split()');
        }
      }
      return super.evaluateCallExpression(
        { ...expr, callee: { ...c, object: held(object) }, args: heldArgs(args, kwargs) },
        env,
      );
    }
    checkReplace(s, args, kwargs) {
      const [from, to] = [args[0]?.value, args[1]?.value];
      if (typeof from !== 'string' || typeof to !== 'string') return; // the library refuses it
      const count = args[2]?.value ?? kwargs.get('count')?.value;
      let n = occurrences(s, from, STRING_MAX);
      if (Number.isInteger(count) && count >= 0) n = Math.min(n, count);
      this.fits('string', s.length + n * Math.max(0, to.length - from.length), 'replace()');
    }
    // a loop's body runs through evaluateBlock, even when empty
    evaluateBlock(statements, env) {
      this.step();
      return super.evaluateBlock(statements, env);
    }
    evaluate(statement, env) {
      if (statement?.type === HELD) return statement.value;
      this.step();
      const v = super.evaluate(statement, env);
      const x = v?.value;
      if (typeof x === 'string' ? x.length > STRING_MAX : Array.isArray(x) && x.length > LIST_MAX)
        throw new OxError(
          'FORMAT',
          `chat template: a ${typeof x === 'string' ? 'string' : 'list'} of ${x.length} elements (at most ${typeof x === 'string' ? STRING_MAX : LIST_MAX})`,
        );
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
    if (![start, stop, step].every(Number.isInteger) || step === 0)
      throw new OxError('FORMAT', 'chat template: range() needs integers and a non-zero step');
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
  return String(format).replace(
    /%[YmdbBHM%]/g,
    (t) =>
      ({
        '%Y': String(d.getFullYear()),
        '%m': pad(d.getMonth() + 1),
        '%d': pad(d.getDate()),
        '%b': month('short'),
        '%B': month('long'),
        '%H': pad(d.getHours()),
        '%M': pad(d.getMinutes()),
        '%%': '%',
      })[t],
  );
}

function environment(it, vars) {
  const env = new jinja.Environment();
  const globals = {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
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
