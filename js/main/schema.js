// schema.js — JSON schema -> GBNF grammar, for the engine's constrained sampling
// (docs/grammar.md). Two notations share one walk over the schema: JSON text
// (response_format) and Gemma 4's tool-call notation (strings between <|"|>, bare keys), which
// a tool call's arguments are written in.
//
// The subset: type (one or a list), properties / required / additionalProperties, enum,
// const, items / prefixItems / minItems / maxItems, anyOf / oneOf, allOf of one schema,
// $ref to #/$defs or #/definitions, nullable, string minLength / maxLength and the formats
// date, time, date-time, uuid. Anything else that would change what is valid (pattern,
// numeric bounds, a second allOf member, ...) is an OxError UNSUPPORTED naming the keyword,
// never silently ignored. Keys come in the order of `properties`, required ones always,
// optional ones optionally. Whitespace between JSON tokens is bounded so that a sampler
// cannot loop on it; Gemma 4's notation has none (as the template writes it).
import { OxError } from '../shared/errors.js';

const unsupported = (where, what) => new OxError('UNSUPPORTED', `JSON schema${where ? ' at ' + where : ''}: ${what}`);
const IGNORED = new Set(['$schema', '$id', 'title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly']);
const HANDLED = new Set(['type', 'properties', 'required', 'additionalProperties', 'enum', 'const', 'items', 'prefixItems', 'minItems', 'maxItems', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs', 'definitions', 'nullable', 'minLength', 'maxLength', 'format']);

const lit = (s) => JSON.stringify(s).replace(/\\u([0-9a-f]{4})/g, (_, h) => `\\x${h.slice(2)}`); // a GBNF string literal

const COMMON = {
  'json-char': '[^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  integer: '"-"? ([0-9] | [1-9] [0-9]{1,15})',
  number: '"-"? ([0-9] | [1-9] [0-9]{1,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?',
  boolean: '"true" | "false"',
  null: '"null"',
  'g4-char': '[^<] | "<" [^|]',
  'g4-char1': '[^<]', // one code point (a bounded length counts code points)
  date: '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
  time: '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [-+] [0-9]{2} ":" [0-9]{2})?',
  uuid: '[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}',
};

// The two notations: how strings, keys and values are spelled.
const JSON_TEXT = {
  ws: '| " " | "\\n" [ \\t]{0,8}', // between tokens, bounded
  string: (body) => `"\\"" ${body} "\\""`,
  char: 'json-char',
  boundedChar: 'json-char',
  key: (k) => lit(JSON.stringify(k)),
  anyKey: () => `"\\"" json-char{1,64} "\\""`,
  literal: (v) => lit(JSON.stringify(v)),
};
const GEMMA4 = {
  ws: '""', // the template writes {key:value,...} without spaces
  string: (body) => `"<|\\"|>" ${body} "<|\\"|>"`,
  char: 'g4-char', // no "<|" inside: a string cannot spell its own delimiter
  boundedChar: 'g4-char1',
  key: (k) => lit(k),
  anyKey: () => '[a-zA-Z_] [a-zA-Z0-9_]{0,63}',
  literal: (v) => lit(gemma4Literal(v)),
};

function gemma4Literal(v) {
  if (typeof v === 'string') return `<|"|>${v}<|"|>`;
  if (Array.isArray(v)) return '[' + v.map(gemma4Literal).join(',') + ']';
  if (v && typeof v === 'object') return '{' + Object.keys(v).sort().map((k) => `${k}:${gemma4Literal(v[k])}`).join(',') + '}';
  return JSON.stringify(v);
}

class Builder {
  constructor(root, notation) {
    this.rootSchema = root;
    this.n = notation;
    this.rules = new Map();
    this.used = new Set(); // common rules referenced
    this.refs = new Map(); // $ref -> rule name (recursive schemas)
  }
  add(name, body) {
    let k = name.replace(/[^a-zA-Z0-9-]/g, '-') || 'r';
    const taken = (x) => (this.rules.has(x) && this.rules.get(x) !== body) || x in COMMON || x === 'root';
    for (let i = 1, base = k; taken(k); i++) k = `${base}-${i}`;
    this.rules.set(k, body);
    return k;
  }
  common(name) {
    this.used.add(name);
    return name;
  }
  resolve(ref, where) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const target = m && this.rootSchema[m[1]]?.[decodeURIComponent(m[2])];
    if (!target) throw unsupported(where, `$ref ${JSON.stringify(ref)} (only #/$defs/... and #/definitions/... of this schema)`);
    return target;
  }
  // the rule (or inline expression) for one schema
  visit(s, where, name) {
    if (s === true || s === undefined || (s && typeof s === 'object' && !Object.keys(s).some((k) => !IGNORED.has(k)))) return this.any(where);
    if (s === false) throw unsupported(where, 'false (nothing is valid)');
    if (typeof s !== 'object' || s === null) throw unsupported(where, 'a schema must be an object or a boolean');
    for (const k of Object.keys(s)) if (!IGNORED.has(k) && !HANDLED.has(k)) throw unsupported(where, `keyword ${JSON.stringify(k)}`);
    if (s.$ref) {
      if (!this.refs.has(s.$ref)) {
        const rule = this.add(`ref-${s.$ref.split('/').pop()}`, 'PENDING');
        this.refs.set(s.$ref, rule);
        this.rules.set(rule, this.visit(this.resolve(s.$ref, where), s.$ref, rule));
      }
      return this.refs.get(s.$ref);
    }
    if (s.allOf) {
      if (s.allOf.length !== 1) throw unsupported(where, 'allOf of more than one schema');
      return this.visit({ ...s, allOf: undefined, ...s.allOf[0] }, where, name);
    }
    let body;
    if (s.const !== undefined) body = this.n.literal(s.const);
    else if (s.enum) {
      if (!Array.isArray(s.enum) || !s.enum.length) throw unsupported(where, 'enum must be a non-empty array');
      body = s.enum.map((v) => this.n.literal(v)).join(' | ');
    } else if (s.anyOf || s.oneOf) {
      const alts = s.anyOf ?? s.oneOf;
      body = alts.map((a, i) => this.visit(a, `${where}/${s.anyOf ? 'anyOf' : 'oneOf'}/${i}`)).join(' | ');
    } else {
      const types = s.type === undefined ? inferTypes(s) : [].concat(s.type);
      body = types.map((t) => this.typed(t, s, where)).join(' | ');
    }
    if (s.nullable) body = `${body} | ${this.common('null')}`;
    return name ? body : this.add(name ?? ruleName(where), body);
  }
  typed(t, s, where) {
    switch (t) {
      case 'string': return this.string(s, where);
      case 'integer': return this.common('integer');
      case 'number': return this.common('number');
      case 'boolean': return this.common('boolean');
      case 'null': return this.common('null');
      case 'object': return this.object(s, where);
      case 'array': return this.array(s, where);
      default: throw unsupported(where, `type ${JSON.stringify(t)}`);
    }
  }
  string(s, where) {
    if (s.format !== undefined) {
      const f = { date: 'date', time: 'time', 'date-time': null, uuid: 'uuid' }[s.format];
      if (f === undefined) throw unsupported(where, `string format ${JSON.stringify(s.format)} (date, time, date-time, uuid)`);
      const body = f ? this.common(f) : `${this.common('date')} "T" ${this.common('time')}`;
      return `(${this.n.string(body)})`;
    }
    const lo = s.minLength ?? 0;
    const hi = s.maxLength;
    if (!Number.isInteger(lo) || lo < 0 || (hi !== undefined && (!Number.isInteger(hi) || hi < lo))) throw unsupported(where, 'minLength / maxLength must be integers with min <= max');
    const rep = hi === undefined ? (lo ? `{${lo},}` : '*') : `{${lo},${hi}}`;
    return `(${this.n.string(`${this.common(hi === undefined ? this.n.char : this.n.boundedChar)}${rep}`)})`;
  }
  object(s, where) {
    const props = s.properties ?? {};
    const names = Object.keys(props);
    const req = new Set(s.required ?? []);
    for (const r of req) if (!(r in props)) throw unsupported(where, `required ${JSON.stringify(r)} is not in properties`);
    const extraSchema = s.additionalProperties;
    if (!names.length && extraSchema === undefined) return this.any(where, 'object');
    if (!names.length && extraSchema === false) return '("{" ws "}")';
    const pairs = names.map((k) => `${this.n.key(k)} ws ":" ws ${this.visit(props[k], `${where}/properties/${k}`)}`);
    // extra keys (only where additionalProperties allows them: unlike JSON schema's default,
    // an object with properties gets no others, as llama.cpp does) come after the named ones
    const extra = extraSchema === undefined || extraSchema === false ? null
      : `${this.n.anyKey()} ws ":" ws ${this.visit(extraSchema === true ? {} : extraSchema, `${where}/additionalProperties`)}`;
    const moreExtra = extra ? ` (ws "," ws ${extra}){0,16}` : '';
    // rest[i]: the keys from i on, after some key was written (each one behind a comma)
    const rest = new Array(names.length + 1).fill('');
    rest[names.length] = moreExtra;
    for (let i = names.length - 1; i >= 1; i--) {
      const one = req.has(names[i]) ? `ws "," ws ${pairs[i]}` : `(ws "," ws ${pairs[i]})?`;
      rest[i] = this.add(`${ruleName(where)}-rest-${i}`, `${one}${rest[i + 1] ? ' ' + rest[i + 1] : ''}`);
    }
    // the first key written: any optional one up to the first required one, or that one
    const firstReq = names.findIndex((k) => req.has(k));
    const alts = [];
    for (let j = 0; j <= (firstReq < 0 ? names.length - 1 : firstReq); j++) alts.push(`${pairs[j]}${rest[j + 1] ? ' ' + rest[j + 1] : ''}`);
    if (extra && firstReq < 0) alts.push(`${extra}${moreExtra}`);
    return `("{" ws (${alts.join(' | ')})${firstReq < 0 ? '?' : ''} ws "}")`;
  }
  array(s, where) {
    const lo = s.minItems ?? 0;
    const hi = s.maxItems;
    if (!Number.isInteger(lo) || lo < 0 || (hi !== undefined && (!Number.isInteger(hi) || hi < lo))) throw unsupported(where, 'minItems / maxItems must be integers with min <= max');
    if (s.prefixItems) {
      const items = s.prefixItems.map((p, i) => this.visit(p, `${where}/prefixItems/${i}`));
      if (s.items !== undefined && s.items !== false) throw unsupported(where, 'prefixItems with items');
      return `("[" ws ${items.join(` ws "," ws `)} ws "]")`;
    }
    const item = this.visit(s.items ?? {}, `${where}/items`);
    const tail = `("," ws ${item})`;
    const rest = hi === undefined ? `${tail}{${Math.max(0, lo - 1)},}` : `${tail}{${Math.max(0, lo - 1)},${Math.max(0, hi - 1)}}`;
    const some = `${item} ws ${rest}`;
    if (hi === 0) return `("[" ws "]")`;
    return `("[" ws ${lo > 0 ? some : `(${some})?`} ws "]")`;
  }
  // any JSON value (an unconstrained schema), nested at most two deep so a sampler cannot
  // recurse without end
  any(where, only) {
    const key = this.n.anyKey();
    const obj = (v) => `"{" ws (${key} ws ":" ws ${v} ("," ws ${key} ws ":" ws ${v}){0,16})? ws "}"`;
    const arr = (v) => `"[" ws (${v} ("," ws ${v}){0,16})? ws "]"`;
    let v = this.add('any-0', [this.string({}, where), this.common('number'), this.common('boolean'), this.common('null')].join(' | '));
    v = this.add('any-1', `${v} | ${obj(v)} | ${arr(v)}`);
    return only === 'object' ? this.add('any-object', obj(v)) : this.add('any', `${v} | ${obj(v)} | ${arr(v)}`);
  }
  text(root) {
    const out = [`root ::= ${root}`, `ws ::= ${this.n.ws}`];
    for (const [k, v] of this.rules) out.push(`${k} ::= ${v}`);
    // common rules, and the ones they use
    const need = new Set(this.used);
    if (need.has('time') || need.has('date')) need.add('date').add('time');
    for (const k of need) out.push(`${k} ::= ${COMMON[k]}`);
    return out.join('\n') + '\n';
  }
}

const ruleName = (where) => (where.split('/').filter(Boolean).pop() ?? 'value').replace(/[^a-zA-Z0-9]/g, '-') || 'value';

function inferTypes(s) {
  if (s.properties || s.additionalProperties !== undefined || s.required) return ['object'];
  if (s.items || s.prefixItems) return ['array'];
  if (s.minLength !== undefined || s.maxLength !== undefined || s.format) return ['string'];
  return ['string', 'number', 'boolean', 'null', 'object', 'array'];
}

/**
 * GBNF for JSON text valid under `schema` (response_format json_schema / json_object).
 * @param {object|boolean} schema
 * @returns {string}
 */
export function schemaGrammar(schema) {
  const b = new Builder(schema, JSON_TEXT);
  const root = b.visit(schema, '', null);
  return b.text(`ws ${root} ws`);
}

/**
 * GBNF for the rest of a Gemma 4 tool call after `<|tool_call>call:` (or after the name, with
 * afterName): NAME{arguments}<tool_call|>, arguments in Gemma 4 notation under each tool's
 * parameters schema; with parallel, further calls may follow.
 * @param {{function: {name: string, parameters?: object}}[]} tools
 * @param {{afterName?: boolean, parallel?: boolean}} [opts]
 */
export function toolCallGrammar(tools, { afterName = false, parallel = true } = {}) {
  const b = new Builder({}, GEMMA4);
  const calls = tools.map((t) => {
    const f = t.function;
    b.rootSchema = f.parameters ?? {};
    const params = f.parameters ?? { type: 'object', properties: {}, additionalProperties: false };
    const args = b.visit({ type: 'object', ...params }, `tools/${f.name}`, null);
    return { name: f.name, args };
  });
  const first = afterName ? calls[0].args : `(${calls.map((c) => `${lit(c.name)} ${c.args}`).join(' | ')})`;
  const again = calls.map((c) => `"<|tool_call>call:" ${lit(c.name)} ${c.args} "<tool_call|>"`).join(' | ');
  return b.text(`${first} "<tool_call|>"${parallel ? ` (${again}){0,8}` : ''}`);
}
