// toolcalls.js — Gemma 4's tool-call syntax, both ways (docs/gemma4.md, "Tools").
//
// The model writes a turn as: an optional thought channel `<|channel>thought\n…<channel|>`,
// text, and tool calls `<|tool_call>call:NAME{key:value,…}<tool_call|>`. Values are Gemma 4's
// own notation: strings between `<|"|>` delimiters (no escapes inside), bare keys, numbers,
// true/false/null, `[…]` and `{…}`. parseTurn() turns such a text into OpenAI's shape
// (content, reasoning, tool calls with JSON arguments) the way llama.cpp's Gemma 4 parser does;
// TurnStream yields the deltas of a streamed response. Both run one resumable reader that looks
// at each character a bounded number of times, so a stream costs time in proportion to its
// length however it is split (a hostile model cannot freeze the page with it). The other
// direction (JSON values -> Gemma 4 notation) is formatValue(), used for tool calls and tool
// responses rendered back into a prompt.

const Q = '<|"|>';
const CALL_OPEN = '<|tool_call>';
const CALL_CLOSE = '<tool_call|>';
const CH_OPEN = '<|channel>';
const CH_CLOSE = '<channel|>';
const TURN_OPEN = '<|turn>model\n';
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;

/** Thrown by the value parser on text that cannot be Gemma 4 notation. */
class SyntaxErr extends Error {}
/** Thrown when the text ends inside a value (streaming: wait for more). */
class Incomplete extends Error {}

const isSpace = (c) => /\s/.test(c);
const isHigh = (code) => code >= 0xd800 && code <= 0xdbff;
const NAME_CHAR = /[\w.-]/;

function escapeInner(s) {
  return JSON.stringify(s).slice(1, -1);
}

// The end of a streamed text may hold the first characters of a marker (when a tokenizer
// splits it): they are not content yet.
function stripPartialMarker(s, marker) {
  for (let k = Math.min(marker.length - 1, s.length); k > 0; k--)
    if (s.endsWith(marker.slice(0, k))) return s.slice(0, -k);
  return s;
}

// What of a streamed piece may be shown: all but a tail that may still become a marker (or a
// high surrogate whose other half is still to come).
function showable(s, markers) {
  for (const m of markers) s = stripPartialMarker(s, m);
  return s.length && isHigh(s.charCodeAt(s.length - 1)) ? s.slice(0, -1) : s;
}

// The beginnings of a number (-?\d*(\.\d*)?([eE][+-]?\d*)?, up to the end of the text so far),
// one character at a time: 0 start, 1 after '-', 2 integer digits, 3 after '.' (fraction digits), 4 after e/E,
// 5 exponent sign or digits; -1: not the beginning of a number.
function numberStep(st, c) {
  const digit = c >= '0' && c <= '9';
  if (st <= 2) {
    if (digit) return 2;
    if (c === '-' && st === 0) return 1;
    if (c === '.') return 3;
    return c === 'e' || c === 'E' ? 4 : -1;
  }
  if (st === 3) return digit ? 3 : c === 'e' || c === 'E' ? 4 : -1;
  if (st === 4) return digit || c === '+' || c === '-' ? 5 : -1;
  return digit ? 5 : -1;
}

// A resumable reader of one Gemma 4 value: run(buf, base, final) reads from this.i (a position
// in the whole text; buf holds the text from `base` on) as far as the text goes, appending the
// value's JSON text through emit() piece by piece, and returns true once the value is complete
// (this.i after it), false when the text ends inside it (call again when the text has grown).
// Text that cannot be Gemma 4 notation throws SyntaxErr; with final, text ending inside the
// value throws Incomplete. Each character is looked at a bounded number of times, however the
// text arrives; this.ops counts them. keep() is the first position still needed.
class ValueReader {
  constructor(i, emit) {
    this.i = i;
    this.emit = emit;
    this.stack = []; // open containers: {close, dict}
    this.state = 'value';
    this.from = 0; // string / key: the first character not emitted yet
    this.word = ''; // a literal or a number being read
    this.num = 0; // the number's state (numberStep)
    this.ops = 0;
  }
  keep() {
    return this.state === 'string' || this.state === 'key' ? this.from : this.i;
  }
  run(buf, base, final) {
    const end = base + buf.length;
    const at = (p) => buf[p - base];
    for (;;) {
      const st = this.state;
      if (st === 'string') {
        const from = Math.max(this.from, this.i);
        const j = buf.indexOf(Q, from - base);
        this.ops += (j < 0 ? end : base + j + Q.length) - from;
        if (j >= 0) {
          this.emit(escapeInner(buf.slice(this.from - base, j)) + '"');
          this.i = base + j + Q.length;
          if (this.scalarDone()) return true;
          continue;
        }
        if (final) throw new Incomplete();
        const show = showable(buf.slice(this.from - base), [Q]);
        if (show) this.emit(escapeInner(show));
        this.from += show.length;
        this.i = Math.max(this.from, end - Q.length + 1); // where a closing delimiter may start
        return false;
      }
      if (st === 'key') {
        let j = this.i;
        while (j < end && at(j) !== ':' && at(j) !== '}') j++;
        this.ops += j - this.i;
        this.i = j;
        if (j >= end) {
          if (final) throw new Incomplete();
          const show = showable(buf.slice(this.from - base), []);
          if (show) this.emit(escapeInner(show));
          this.from += show.length;
          return false;
        }
        if (at(j) !== ':') throw new SyntaxErr(`a key was expected at ${this.from}`);
        this.emit(escapeInner(buf.slice(this.from - base, j - base)) + '":');
        this.i = j + 1;
        this.state = 'value';
        continue;
      }
      if (st === 'number' || st === 'literal') {
        if (!this.readWord(buf, base, end, final)) return false;
        if (this.scalarDone()) return true;
        continue;
      }
      // the structural states: skip whitespace first
      while (this.i < end && isSpace(at(this.i))) (this.i++, this.ops++);
      if (this.i >= end) {
        if (final) throw new Incomplete();
        return false;
      }
      const c = at(this.i);
      this.ops++;
      const top = this.stack[this.stack.length - 1];
      if (st === 'value') {
        if (!this.value(buf, base, end, final)) return false;
      } else if (st === 'first' && c === top.close) this.close(top);
      else if (st === 'first' || st === 'keyStart') {
        if (top.dict) {
          if (c === ':' || c === '}') throw new SyntaxErr(`a key was expected at ${this.i}`);
          this.emit('"');
          this.state = 'key';
          this.from = this.i;
        } else this.state = 'value';
      } else if (c === ',') {
        // 'after' a value in a container
        this.emit(',');
        this.i++;
        this.state = top.dict ? 'keyStart' : 'value';
      } else if (c === top.close) this.close(top);
      else throw new SyntaxErr(`',' or '${top.close}' expected at ${this.i}`);
      if (this.state === 'done') return true;
    }
  }
  // a value starts at this.i (not whitespace); false: wait for more text
  value(buf, base, end, final) {
    const c = buf[this.i - base];
    if (buf.startsWith(Q, this.i - base)) {
      this.emit('"');
      this.i += Q.length;
      this.from = this.i;
      this.state = 'string';
    } else if (c === '{' || c === '[') {
      this.emit(c);
      this.stack.push({ close: c === '{' ? '}' : ']', dict: c === '{' });
      this.i++;
      this.state = 'first';
    } else if (!final && end - this.i < Q.length && Q.startsWith(buf.slice(this.i - base))) {
      return false; // a string's opening delimiter, split
    } else if (c === 't' || c === 'f' || c === 'n') {
      this.word = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
      this.num = 0;
      this.state = 'literal';
    } else if (numberStep(0, c) >= 0) {
      this.word = '';
      this.num = 0;
      this.start = this.i;
      this.state = 'number';
    } else
      throw new SyntaxErr(`unexpected ${JSON.stringify(buf.slice(this.i - base, this.i - base + 12))} at ${this.i}`);
    return true;
  }
  // a literal (this.word, this.num characters of it read) or a number (this.word read so far)
  readWord(buf, base, end, final) {
    if (this.state === 'literal') {
      const lit = this.word;
      while (this.num < lit.length && this.i < end) {
        this.ops++;
        if (buf[this.i - base] !== lit[this.num])
          throw new SyntaxErr(
            `unexpected ${JSON.stringify(buf.slice(this.i - this.num - base, this.i - this.num - base + 12))} at ${this.i - this.num}`,
          );
        this.num++;
        this.i++;
      }
      if (this.num < lit.length) {
        if (final) throw new Incomplete();
        return false;
      }
      this.emit(lit);
      return true;
    }
    const from = this.i;
    while (this.i < end && this.num >= 0) {
      const next = numberStep(this.num, buf[this.i - base]);
      if (next < 0) break;
      this.num = next;
      this.i++;
    }
    this.ops += this.i - from + 1;
    this.word += buf.slice(from - base, this.i - base);
    if (this.i >= end && !final) return false; // the number may go on in the next piece
    const m = NUMBER.exec(this.word);
    if (!m) throw new SyntaxErr(`unexpected ${JSON.stringify(this.word.slice(0, 12))} at ${this.start}`);
    this.i = this.start + m[0].length;
    if (m[0].length < this.word.length && this.stack.length)
      throw new SyntaxErr(`',' or '${this.stack[this.stack.length - 1].close}' expected at ${this.i}`);
    this.emit(m[0]);
    return true;
  }
  close(top) {
    this.emit(top.close);
    this.stack.pop();
    this.i++;
    this.state = this.stack.length ? 'after' : 'done';
  }
  scalarDone() {
    this.state = this.stack.length ? 'after' : 'done';
    return this.state === 'done';
  }
}

/**
 * Gemma 4 notation -> JSON text (compact), e.g. `{city:<|"|>Paris<|"|>}` -> `{"city":"Paris"}`.
 * @param {string} src
 * @returns {string}
 */
export function valueToJSON(src) {
  let out = '';
  const r = new ValueReader(0, (t) => {
    out += t;
  });
  try {
    r.run(src, 0, true);
  } catch (e) {
    if (e instanceof Incomplete) throw new SyntaxError('Gemma 4 value: the text ends inside the value');
    throw new SyntaxError(`Gemma 4 value: ${e.message}`);
  }
  let i = r.i;
  while (i < src.length && isSpace(src[i])) i++;
  if (i !== src.length) throw new SyntaxError(`Gemma 4 value: text after the value at ${i}`);
  return out;
}

// The turn's reader, resumable as the value reader is: feed() it the text as it grows (or
// whole), finish() it at the end; it reports what it reads through sink.content(text),
// sink.reasoning(text), sink.call(name) (a call opens: its arguments follow through
// sink.args(text)), sink.callEnd() and sink.callDrop() (what looked like a call is not one: its
// text is read again as text). It keeps only the text it may still need: the unread tail, and
// an open call's text (read again if the call turns out not to be one). this.ops counts the
// characters looked at.
class TurnReader {
  constructor({ tools, sink }) {
    this.tools = tools;
    this.sink = sink;
    this.markers = tools ? [CH_OPEN, CH_CLOSE, CALL_OPEN] : [CH_OPEN, CH_CLOSE];
    this.buf = '';
    this.base = 0; // the position of buf[0] in the whole text
    this.i = 0;
    this.state = 'start';
    this.callStart = -1;
    this.callText = []; // an open call's text before base
    this.name = '';
    this.value = null;
    this.opsBefore = 0;
  }
  get ops() {
    return this.opsBefore + (this.value?.ops ?? 0);
  }
  feed(piece) {
    this.buf += piece;
    this.run(false);
    this.trim();
  }
  finish({ cut = false } = {}) {
    this.run(!cut);
  }
  // drop what is no longer needed (an open call's text is set aside)
  trim() {
    const keep = this.state === 'call' ? this.value.keep() : this.i;
    const k = Math.min(keep, this.base + this.buf.length) - this.base;
    if (k <= 0) return;
    if (this.callStart >= 0) this.callText.push(this.buf.slice(0, k));
    this.buf = this.buf.slice(k);
    this.base += k;
  }
  run(final) {
    const end = () => this.base + this.buf.length;
    const at = (p) => this.buf[p - this.base];
    const rest = () => this.buf.slice(this.i - this.base);
    for (;;) {
      const n = end();
      switch (this.state) {
        case 'start': {
          if (!final && n < TURN_OPEN.length && TURN_OPEN.startsWith(this.buf)) return; // the generation prompt, split
          if (this.buf.startsWith(TURN_OPEN)) this.i = TURN_OPEN.length;
          this.state = 'text';
          break;
        }
        case 'text': {
          if (this.i >= n) return;
          let j = -1;
          for (const m of this.markers) {
            const k = this.buf.indexOf(m, this.i - this.base);
            if (k >= 0 && (j < 0 || k < j)) j = k;
          }
          this.opsBefore += (j < 0 ? n - this.base : j) - (this.i - this.base);
          if (j < 0) {
            const piece = rest();
            const show = final ? piece : showable(piece, [CALL_OPEN, CH_OPEN, CH_CLOSE]);
            if (show) this.sink.content(show);
            this.i += show.length;
            return;
          }
          if (j + this.base > this.i) this.sink.content(this.buf.slice(this.i - this.base, j));
          this.i = this.base + j;
          if (this.buf.startsWith(CH_OPEN, j)) this.state = 'channel';
          else if (this.buf.startsWith(CH_CLOSE, j))
            this.i += CH_CLOSE.length; // a stray closing channel token
          else {
            this.callStart = this.i;
            this.i += CALL_OPEN.length;
            this.name = '';
            this.state = 'head';
          }
          break;
        }
        case 'channel': {
          // empty channels `<|channel>` not followed by `thought` are dropped, as llama.cpp does
          const after = this.buf.slice(this.i - this.base + CH_OPEN.length, this.i - this.base + CH_OPEN.length + 7);
          this.opsBefore += CH_OPEN.length + after.length;
          if (after === 'thought') {
            this.i += CH_OPEN.length + 7;
            this.state = 'thoughtSpace';
          } else if (!final && after.length < 7 && 'thought'.startsWith(after)) return;
          else {
            this.i += CH_OPEN.length;
            this.state = 'text';
          }
          break;
        }
        case 'thoughtSpace':
          while (this.i < n && isSpace(at(this.i))) (this.i++, this.opsBefore++);
          if (this.i >= n) return;
          this.state = 'thought';
          break;
        case 'thought': {
          const j = this.buf.indexOf(CH_CLOSE, this.i - this.base);
          this.opsBefore += (j < 0 ? n - this.base : j) - (this.i - this.base);
          if (j < 0) {
            const piece = rest();
            const show = final ? piece : showable(piece, [CH_CLOSE]);
            if (show) this.sink.reasoning(show);
            this.i += show.length;
            return;
          }
          if (j + this.base > this.i) this.sink.reasoning(this.buf.slice(this.i - this.base, j));
          this.i = this.base + j + CH_CLOSE.length;
          this.state = 'text';
          break;
        }
        case 'head': {
          // `call:NAME{` after the call token; anything else is not a tool call
          const head = 'call:';
          const headStart = this.callStart + CALL_OPEN.length;
          if (this.i === headStart) {
            const got = this.buf.slice(this.i - this.base, this.i - this.base + head.length);
            this.opsBefore += got.length;
            if (got === head) this.i += head.length;
            else if (!final && head.startsWith(got)) return;
            else {
              this.notACall();
              break;
            }
          }
          const from = this.i;
          while (this.i < n && NAME_CHAR.test(at(this.i))) this.i++;
          this.opsBefore += this.i - from + 1;
          this.name += this.buf.slice(from - this.base, this.i - this.base);
          if (this.i >= n && !final) return;
          if (this.i >= n || at(this.i) !== '{' || !this.name) {
            this.notACall();
            break;
          }
          this.sink.call(this.name);
          this.value = new ValueReader(this.i, (t) => this.sink.args(t));
          this.state = 'call';
          break;
        }
        case 'call': {
          let done;
          try {
            done = this.value.run(this.buf, this.base, final);
          } catch (e) {
            if (!(e instanceof SyntaxErr || e instanceof Incomplete)) throw e;
            this.notACall();
            break;
          }
          if (!done) return;
          this.i = this.value.i;
          this.state = 'close';
          break;
        }
        case 'close': {
          const got = this.buf.slice(this.i - this.base, this.i - this.base + CALL_CLOSE.length);
          this.opsBefore += got.length;
          if (got === CALL_CLOSE) {
            this.i += CALL_CLOSE.length;
            this.sink.callEnd();
            this.endCall();
            this.state = 'text';
          } else if (!final && CALL_CLOSE.startsWith(got)) return;
          else this.notACall();
          break;
        }
      }
    }
  }
  // what followed the call token is not a tool call: the token is content, and the text after
  // it is read again as any text
  notACall() {
    if (this.state === 'call') this.sink.callDrop();
    this.sink.content(CALL_OPEN);
    const from = this.callStart + CALL_OPEN.length;
    const text = this.callText.join('') + this.buf;
    const start = this.base - this.callText.reduce((a, t) => a + t.length, 0);
    this.buf = text.slice(from - start);
    this.base = from;
    this.i = from;
    this.endCall();
    this.state = 'text';
  }
  endCall() {
    if (this.value) this.opsBefore += this.value.ops;
    this.value = null;
    this.callStart = -1;
    this.callText = [];
  }
}

// A sink that gathers a turn: {content, reasoning, toolCalls} as parseTurn returns it.
function gather() {
  const t = { content: [], reasoning: [], calls: [] };
  return {
    t,
    content: (s) => t.content.push(s),
    reasoning: (s) => t.reasoning.push(s),
    call: (name) => t.calls.push({ name, args: [], partial: true }),
    args: (s) => t.calls[t.calls.length - 1].args.push(s),
    callEnd: () => {
      t.calls[t.calls.length - 1].partial = false;
    },
    callDrop: () => t.calls.pop(),
    turn: (partial) => ({
      content: t.content.join(''),
      // the template writes `thought\n…\n<channel|>`: the final newline is the format's, not the thought's
      reasoning: partial ? t.reasoning.join('') : t.reasoning.join('').trimEnd(),
      toolCalls: t.calls.map((c) =>
        c.partial
          ? { name: c.name, arguments: c.args.join(''), partial: true }
          : { name: c.name, arguments: c.args.join('') },
      ),
    }),
  };
}

/**
 * Parse a model turn.
 * @param {string} text the generated text with control tokens shown
 * @param {{partial?: boolean, tools?: boolean}} [opts] partial: the text may end anywhere
 *   (a stream in progress, or one cut by max_tokens); incomplete parts are returned as far as
 *   they go (a call cut short is in toolCalls with partial: true, never in content). tools:
 *   false keeps tool-call syntax as content (no tools were offered).
 * @returns {{content: string, reasoning: string, toolCalls: {name: string, arguments: string, partial?: boolean}[]}}
 */
export function parseTurn(text, { partial = false, tools = true } = {}) {
  const sink = gather();
  const r = new TurnReader({ tools, sink });
  r.feed(text);
  r.finish({ cut: partial });
  return sink.turn(partial);
}

/**
 * Incremental parsing of a streamed turn: push() each new piece of text, get the deltas.
 * A delta is {content}, {reasoning}, or {toolCall: {index, name?, arguments}} — the name comes
 * once, with the first piece of a call's arguments; arguments grow by appended text only.
 * Each character is read a bounded number of times (ops counts them), so a stream costs time
 * in proportion to its length however it is split.
 */
export class TurnStream {
  /** @param {{tools?: boolean}} [opts] as parseTurn's */
  constructor({ tools = true } = {}) {
    this.out = [];
    this.calls = 0; // calls opened in this stream (a dropped call keeps its index)
    this.whole = gather();
    const w = this.whole;
    const sink = {
      content: (s) => {
        w.content(s);
        this.out.push({ content: s });
      },
      reasoning: (s) => {
        w.reasoning(s);
        this.out.push({ reasoning: s });
      },
      call: (name) => {
        w.call(name);
        this.open = { index: this.calls++, name };
      },
      args: (s) => {
        w.args(s);
        const o = this.open;
        const last = this.out[this.out.length - 1];
        if (o.name) this.out.push({ toolCall: { index: o.index, name: o.name, arguments: s } });
        else if (last?.toolCall?.index === o.index) last.toolCall.arguments += s;
        else this.out.push({ toolCall: { index: o.index, arguments: s } });
        o.name = null;
      },
      callEnd: () => w.callEnd(),
      callDrop: () => w.callDrop(),
    };
    this.reader = new TurnReader({ tools, sink });
  }
  /** Characters the parser has looked at so far (a cost measure for tests). */
  get ops() {
    return this.reader.ops;
  }
  /** @param {string} piece @returns {object[]} */
  push(piece) {
    this.reader.feed(piece);
    return this.take();
  }
  /**
   * The final deltas and the whole parsed turn.
   * @param {{cut?: boolean}} [opts] cut: the text was cut short (max_tokens): what is open
   *   stays as far as it went (a partial call stays a call) instead of being read as text.
   */
  end({ cut = false } = {}) {
    this.reader.finish({ cut });
    return { deltas: this.take(), turn: this.whole.turn(cut) };
  }
  take() {
    const out = this.out;
    this.out = [];
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
    return (
      '{' +
      Object.keys(v)
        .sort()
        .map((k) => `${k}:${formatValue(v[k])}`)
        .join(',') +
      '}'
    );
  }
  return String(v);
}

// ---- declarations, calls and responses as the Gemma 4 template writes them ----
// (the built-in format uses these when a checkpoint ships no template)

const STANDARD_KEYS = new Set(['description', 'type', 'properties', 'required', 'nullable']);
const upper = (t) => String(t).toUpperCase();
const sortedEntries = (o) =>
  Object.keys(o)
    .sort()
    .map((k) => [k, o[k]]);

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
      parts.push(
        `properties:{${formatParameters(value.properties && typeof value.properties === 'object' ? value.properties : value)}}`,
      );
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
  const args =
    typeof fn.arguments === 'string'
      ? fn.arguments
      : sortedEntries(fn.arguments ?? {})
          .map(([k, v]) => `${k}:${formatValue(v)}`)
          .join(',');
  return `<|tool_call>call:${fn.name}{${args}}<tool_call|>`;
}

/** A tool's result: `<|tool_response>response:NAME{k:v,…}<tool_response|>`; a non-object
 *  result becomes `{value:…}`. */
export function formatResponse(name, response) {
  const body =
    response && typeof response === 'object' && !Array.isArray(response)
      ? sortedEntries(response)
          .map(([k, v]) => `${k}:${formatValue(v)}`)
          .join(',')
      : `value:${formatValue(response)}`;
  return `<|tool_response>response:${name}{${body}}<tool_response|>`;
}
