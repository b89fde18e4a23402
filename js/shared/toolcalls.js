// toolcalls.js — Gemma 4's tool-call syntax, both ways (docs/gemma4.md, "Tools").
//
// The model writes a turn as: an optional thought channel `<|channel>thought\n…<channel|>`,
// text, and tool calls `<|tool_call>call:NAME{key:value,…}<tool_call|>`. Values are Gemma 4's
// own notation: strings between `<|"|>` delimiters (no escapes inside), bare keys, numbers,
// true/false/null, `[…]` and `{…}`. parseTurn() turns such a text into OpenAI's shape
// (content, reasoning, tool calls with JSON arguments) the way llama.cpp's Gemma 4 parser does;
// TurnStream does it incrementally and yields the deltas of a streamed response. The other
// direction (JSON values -> Gemma 4 notation) is formatValue(), used for tool calls and tool
// responses rendered back into a prompt.

const Q = '<|"|>';
const CALL_OPEN = '<|tool_call>';
const CALL_CLOSE = '<tool_call|>';
const CH_OPEN = '<|channel>';
const CH_CLOSE = '<channel|>';
const TURN_OPEN = '<|turn>model\n';
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;
const NUMBER_START = /^-?\d*(?:\.\d*)?(?:[eE][+-]?\d*)?$/; // a number, or its beginning, up to the end

/** Thrown by the value parser on text that cannot be Gemma 4 notation. */
class SyntaxErr extends Error {}
/** Thrown when the text ends inside a value (streaming: wait for more). */
class Incomplete extends Error {}

// A parser over one string: each read*() consumes a value at this.i and returns its JSON text.
// With partial, running out of text inside a value returns the JSON of what was read so far,
// unclosed (as llama.cpp's partial output), and sets this.partial.
class ValueReader {
  constructor(s, i, partial) {
    this.s = s;
    this.i = i;
    this.partial = partial;
    this.cut = false; // the text ended inside the value
  }
  ws() {
    while (this.i < this.s.length && /\s/.test(this.s[this.i])) this.i++;
  }
  value() {
    this.ws();
    if (this.i >= this.s.length) {
      if (!this.partial) throw new Incomplete();
      this.cut = true;
      return '';
    }
    const s = this.s;
    if (s.startsWith(Q, this.i)) return this.string();
    if (this.partial && Q.startsWith(s.slice(this.i))) return this.stop(''); // a string's opening delimiter, split
    if (s[this.i] === '{') return this.dict();
    if (s[this.i] === '[') return this.array();
    for (const lit of ['true', 'false', 'null']) {
      if (s.startsWith(lit, this.i)) {
        this.i += lit.length;
        return lit;
      }
      if (lit.startsWith(s.slice(this.i))) { // the text ends inside the literal
        if (!this.partial) throw new Incomplete();
        this.i = s.length;
        this.cut = true;
        return '';
      }
    }
    // in a stream, a number at the very end of the text may go on in the next piece
    if (this.partial && NUMBER_START.test(s.slice(this.i))) {
      this.i = s.length;
      this.cut = true;
      return '';
    }
    const m = NUMBER.exec(s.slice(this.i));
    if (m) {
      this.i += m[0].length;
      return m[0];
    }
    throw new SyntaxErr(`unexpected ${JSON.stringify(s.slice(this.i, this.i + 12))} at ${this.i}`);
  }
  string() {
    const s = this.s;
    this.i += Q.length;
    const j = s.indexOf(Q, this.i);
    if (j < 0) {
      if (!this.partial) throw new Incomplete();
      const body = stripPartialMarker(s.slice(this.i), Q);
      this.i = s.length;
      this.cut = true;
      return '"' + escapeInner(body);
    }
    const body = s.slice(this.i, j);
    this.i = j + Q.length;
    return JSON.stringify(body);
  }
  dict() {
    return this.items('{', '}', () => {
      const s = this.s;
      this.ws();
      if (this.i >= s.length) return this.stop('');
      // a key: bare characters up to ':' (llama.cpp: [^:}]+)
      let j = this.i;
      while (j < s.length && s[j] !== ':' && s[j] !== '}') j++;
      if (j >= s.length) {
        const key = s.slice(this.i);
        this.i = s.length;
        return this.stop('"' + escapeInner(key));
      }
      if (s[j] !== ':' || j === this.i) throw new SyntaxErr(`a key was expected at ${this.i}`);
      const key = JSON.stringify(s.slice(this.i, j)) + ':';
      this.i = j + 1;
      return key + this.value();
    });
  }
  array() {
    return this.items('[', ']', () => this.value());
  }
  // open item (',' item)* close, each item read by item(); a cut text returns what was read
  items(open, close, item) {
    const s = this.s;
    this.i++; // open
    let out = open;
    this.ws();
    if (s[this.i] === close) {
      this.i++;
      return open + close;
    }
    for (;;) {
      out += item();
      if (this.cut) return out;
      this.ws();
      if (this.i >= s.length) return this.stop(out);
      if (s[this.i] === ',') {
        this.i++;
        out += ',';
        continue;
      }
      if (s[this.i] === close) {
        this.i++;
        return out + close;
      }
      throw new SyntaxErr(`',' or '${close}' expected at ${this.i}`);
    }
  }
  stop(out) {
    if (!this.partial) throw new Incomplete();
    this.cut = true;
    return out;
  }
}

function escapeInner(s) {
  return JSON.stringify(s).slice(1, -1);
}

// The end of a streamed text may hold the first characters of a marker (when a tokenizer
// splits it): they are not content yet.
function stripPartialMarker(s, marker) {
  for (let k = Math.min(marker.length - 1, s.length); k > 0; k--) if (s.endsWith(marker.slice(0, k))) return s.slice(0, -k);
  return s;
}

/**
 * Gemma 4 notation -> JSON text (compact), e.g. `{city:<|"|>Paris<|"|>}` -> `{"city":"Paris"}`.
 * @param {string} src
 * @returns {string}
 */
export function valueToJSON(src) {
  const r = new ValueReader(src, 0, false);
  let out;
  try {
    out = r.value();
  } catch (e) {
    if (e instanceof Incomplete) throw new SyntaxError('Gemma 4 value: the text ends inside the value');
    throw new SyntaxError(`Gemma 4 value: ${e.message}`);
  }
  r.ws();
  if (r.i !== src.length) throw new SyntaxError(`Gemma 4 value: text after the value at ${r.i}`);
  return out;
}

/**
 * Parse a model turn.
 * @param {string} text the generated text with control tokens shown
 * @param {{partial?: boolean, tools?: boolean}} [opts] partial: the text may end anywhere
 *   (a stream in progress); incomplete parts are returned as far as they go. tools: false
 *   keeps tool-call syntax as content (no tools were offered).
 * @returns {{content: string, reasoning: string, toolCalls: {name: string, arguments: string, partial?: boolean}[]}}
 */
export function parseTurn(text, { partial = false, tools = true } = {}) {
  const s = text;
  if (partial && TURN_OPEN.startsWith(s)) return { content: '', reasoning: '', toolCalls: [] }; // the generation prompt, split
  let i = s.startsWith(TURN_OPEN) ? TURN_OPEN.length : 0;
  let content = '';
  let reasoning = '';
  const toolCalls = [];
  const nextMarker = (from) => {
    let best = -1;
    for (const m of tools ? [CH_OPEN, CH_CLOSE, CALL_OPEN] : [CH_OPEN, CH_CLOSE]) {
      const j = s.indexOf(m, from);
      if (j >= 0 && (best < 0 || j < best)) best = j;
    }
    return best;
  };
  while (i < s.length) {
    if (s.startsWith(CH_OPEN, i)) {
      // empty channels `<|channel>` not followed by `thought` are dropped, as llama.cpp does
      while (s.startsWith(CH_OPEN, i) && !s.startsWith(CH_OPEN + 'thought', i)) {
        const rest = s.slice(i + CH_OPEN.length);
        if (partial && rest.length < 'thought'.length && 'thought'.startsWith(rest)) return { content, reasoning, toolCalls };
        i += CH_OPEN.length;
      }
      if (!s.startsWith(CH_OPEN + 'thought', i)) continue;
      i += (CH_OPEN + 'thought').length;
      while (i < s.length && /\s/.test(s[i])) i++;
      const j = s.indexOf(CH_CLOSE, i);
      if (j < 0) {
        reasoning += partial ? stripPartialMarker(s.slice(i), CH_CLOSE) : s.slice(i);
        break;
      }
      reasoning += s.slice(i, j);
      i = j + CH_CLOSE.length;
    } else if (s.startsWith(CH_CLOSE, i)) {
      i += CH_CLOSE.length; // a stray closing channel token
    } else if (tools && s.startsWith(CALL_OPEN, i)) {
      const call = readCall(s, i + CALL_OPEN.length, partial);
      if (call === null) {
        // not a tool call after all: keep the text as content (what follows, as any text)
        content += CALL_OPEN;
        i += CALL_OPEN.length;
        continue;
      }
      if (call.name !== null) toolCalls.push(call.partial ? { name: call.name, arguments: call.arguments, partial: true } : { name: call.name, arguments: call.arguments });
      i = call.end;
    } else {
      const j = nextMarker(i);
      const piece = s.slice(i, j < 0 ? s.length : j);
      content += partial && j < 0 ? stripPartialMarker(stripPartialMarker(stripPartialMarker(piece, CALL_OPEN), CH_OPEN), CH_CLOSE) : piece;
      i = j < 0 ? s.length : j;
    }
  }
  // the template writes `thought\n…\n<channel|>`: the final newline is the format's, not the thought's
  return { content, reasoning: partial ? reasoning : reasoning.trimEnd(), toolCalls };
}

// `call:NAME{…}<tool_call|>` from i. Returns {name, arguments, end, partial}, {name: null} when
// a partial text stops before the name is complete, or null when this is not a tool call.
function readCall(s, i, partial) {
  const head = 'call:';
  if (!s.startsWith(head, i)) {
    if (partial && head.startsWith(s.slice(i))) return { name: null, end: s.length };
    return null;
  }
  i += head.length;
  const brace = s.indexOf('{', i);
  if (brace < 0) {
    if (partial && /^[\w.-]*$/.test(s.slice(i))) return { name: null, end: s.length };
    return null;
  }
  const name = s.slice(i, brace);
  if (!/^[\w.-]+$/.test(name)) return null;
  const r = new ValueReader(s, brace, partial);
  let args;
  try {
    args = r.dict();
  } catch (e) {
    if (e instanceof SyntaxErr || e instanceof Incomplete) return null;
    throw e;
  }
  if (r.cut) return { name, arguments: args, end: s.length, partial: true };
  if (s.startsWith(CALL_CLOSE, r.i)) return { name, arguments: args, end: r.i + CALL_CLOSE.length };
  if (partial && CALL_CLOSE.startsWith(s.slice(r.i))) return { name, arguments: args, end: s.length, partial: true };
  return null;
}

/**
 * Incremental parsing of a streamed turn: push() each new piece of text, get the deltas.
 * A delta is {content}, {reasoning}, or {toolCall: {index, name?, arguments}} — the name comes
 * once, with the first piece of a call's arguments; arguments grow by appended text only.
 */
export class TurnStream {
  /** @param {{tools?: boolean}} [opts] as parseTurn's */
  constructor({ tools = true } = {}) {
    this.tools = tools;
    this.text = '';
    this.sent = { content: '', reasoning: '', calls: [] }; // what was emitted so far
  }
  /** @param {string} piece @returns {object[]} */
  push(piece) {
    this.text += piece;
    return this.diff(parseTurn(this.text, { partial: true, tools: this.tools }));
  }
  /** The final deltas and the whole parsed turn. */
  end() {
    const turn = parseTurn(this.text, { tools: this.tools });
    return { deltas: this.diff(turn), turn };
  }
  diff(turn) {
    const out = [];
    const grow = (key) => {
      const now = turn[key];
      const was = this.sent[key];
      if (now.length > was.length && now.startsWith(was)) {
        out.push({ [key]: now.slice(was.length) });
        this.sent[key] = now;
      }
    };
    grow('reasoning');
    grow('content');
    turn.toolCalls.forEach((c, index) => {
      const was = this.sent.calls[index];
      if (!was) {
        this.sent.calls[index] = c.arguments;
        out.push({ toolCall: { index, name: c.name, arguments: c.arguments } });
      } else if (c.arguments.length > was.length && c.arguments.startsWith(was)) {
        out.push({ toolCall: { index, arguments: c.arguments.slice(was.length) } });
        this.sent.calls[index] = c.arguments;
      }
    });
    return out;
  }
}

/**
 * A JSON value in Gemma 4 notation (keys bare, strings between <|"|>), keys sorted as the
 * checkpoint's template sorts them (dictsort).
 * @param {unknown} v
 * @returns {string}
 */
export function formatValue(v) {
  if (typeof v === 'string') return Q + v + Q;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return '[' + v.map(formatValue).join(',') + ']';
  if (typeof v === 'object') {
    return '{' + Object.keys(v).sort().map((k) => `${k}:${formatValue(v[k])}`).join(',') + '}';
  }
  return String(v);
}

// ---- declarations, calls and responses as the Gemma 4 template writes them ----
// (the built-in format uses these when a checkpoint ships no template)

const STANDARD_KEYS = new Set(['description', 'type', 'properties', 'required', 'nullable']);
const upper = (t) => String(t).toUpperCase();
const sortedEntries = (o) => Object.keys(o).sort().map((k) => [k, o[k]]);

// A parameter list: each property `name:{description…,type:<|"|>T<|"|>}`, names sorted.
// (Names that are schema keywords are skipped, as the template skips them.)
function formatParameters(properties) {
  const out = [];
  for (const [key, value] of sortedEntries(properties ?? {})) {
    if (STANDARD_KEYS.has(key) || !value || typeof value !== 'object') continue;
    const parts = [];
    if (value.description) parts.push(`description:${Q}${value.description}${Q}`);
    const type = upper(value.type ?? '');
    if (type === 'STRING' && value.enum) parts.push(`enum:${formatValue(value.enum)}`);
    else if (type === 'ARRAY' && value.items && typeof value.items === 'object' && Object.keys(value.items).length) {
      const items = [];
      for (const [k, v] of sortedEntries(value.items)) {
        if (v === null || v === undefined) continue;
        if (k === 'properties') items.push(`properties:{${v && typeof v === 'object' ? formatParameters(v) : ''}}`);
        else if (k === 'required') items.push(`required:[${v.map((r) => Q + r + Q).join(',')}]`);
        else if (k === 'type') items.push(`type:${formatValue(typeof v === 'string' ? upper(v) : v.map(upper))}`);
        else items.push(`${k}:${formatValue(v)}`);
      }
      parts.push(`items:{${items.join(',')}}`);
    }
    if (value.nullable) parts.push('nullable:true');
    if (type === 'OBJECT') {
      parts.push(`properties:{${formatParameters(value.properties && typeof value.properties === 'object' ? value.properties : value)}}`);
      if (value.required?.length) parts.push(`required:[${value.required.map((r) => Q + r + Q).join(',')}]`);
    }
    parts.push(`type:${Q}${type}${Q}`);
    out.push(`${key}:{${parts.join(',')}}`);
  }
  return out.join(',');
}

/**
 * A tool in the system turn: `<|tool>declaration:NAME{description:…,parameters:{…}}<tool|>`.
 * @param {{function: {name: string, description?: string, parameters?: object}}} tool
 */
export function formatDeclaration(tool) {
  const f = tool.function;
  let s = `declaration:${f.name}{description:${Q}${f.description ?? ''}${Q}`;
  const p = f.parameters;
  if (p && Object.keys(p).length) {
    s += ',parameters:{';
    if (p.properties && Object.keys(p.properties).length) s += `properties:{${formatParameters(p.properties)}},`;
    if (p.required?.length) s += `required:[${p.required.map((r) => Q + r + Q).join(',')}],`;
    if (p.type) s += `type:${Q}${upper(p.type)}${Q}}`;
  }
  return `<|tool>${s}}<tool|>`;
}

/** A call in a model turn: `<|tool_call>call:NAME{k:v,…}<tool_call|>` (keys sorted). */
export function formatCall(fn) {
  const args = typeof fn.arguments === 'string' ? fn.arguments : sortedEntries(fn.arguments ?? {}).map(([k, v]) => `${k}:${formatValue(v)}`).join(',');
  return `<|tool_call>call:${fn.name}{${args}}<tool_call|>`;
}

/** A tool's result: `<|tool_response>response:NAME{k:v,…}<tool_response|>`; a non-object
 *  result becomes `{value:…}`. */
export function formatResponse(name, response) {
  const body = response && typeof response === 'object' && !Array.isArray(response)
    ? sortedEntries(response).map(([k, v]) => `${k}:${formatValue(v)}`).join(',')
    : `value:${formatValue(response)}`;
  return `<|tool_response>response:${name}{${body}}<tool_response|>`;
}
