// js/main/index.d.ts against what the code accepts: every option object's members are the keys
// of its checks in js/main/options.js (so the typed API and the checked one name the same
// options), the enums are js/shared/abi.js's names (error codes, quant, streamWeights, kvType,
// pooling), and each generation option that goes to C as it is has the type abi.js gives it.
// `npm run typecheck` (tsc) checks that the declarations compile; this test checks what they say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { codes, genOptions, kvType, pooling, quant, stream } from '../../js/shared/abi.js';
import {
  CHAT_OPTIONS,
  EMBED_OPTIONS,
  ESTIMATE_OPTIONS,
  GENERATE_OPTIONS,
  LOAD_OPTIONS,
  SPECULATIVE_OPTIONS,
} from '../../js/main/options.js';

const dts = readFileSync(new URL('../../js/main/index.d.ts', import.meta.url), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');

// the text between the brace at `open` and its match
function braced(text, open) {
  for (let i = open, depth = 0; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error('unbalanced braces in index.d.ts');
}

// member name -> type text, for the members at the top level of an object type's body
function members(body) {
  const out = {};
  let depth = 0,
    start = 0;
  const parts = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if ('{(<['.includes(c)) depth++;
    else if ('})>]'.includes(c) && !(c === '>' && body[i - 1] === '='))
      depth--; // (not an arrow's >)
    else if (c === ';' && depth === 0) (parts.push(body.slice(start, i)), (start = i + 1));
  }
  parts.push(body.slice(start));
  for (const p of parts) {
    const m = /^\s*(\w+)\??\s*:\s*([\s\S]*)$/.exec(p.replace(/\/\/.*$/gm, ''));
    if (m) out[m[1]] = m[2].replace(/\s+/g, ' ').trim();
  }
  return out;
}

// an interface's members, its `extends` (one interface, or a Pick of one) included
function iface(name) {
  const m = new RegExp(`export interface ${name}(?: extends ([^{]*))?\\s*\\{`).exec(dts);
  assert.ok(m, `index.d.ts has no interface ${name}`);
  const own = members(braced(dts, m.index + m[0].length - 1));
  const base = m[1]?.trim();
  if (!base) return own;
  const pick = /^Pick<(\w+),([^>]*)>$/.exec(base.replace(/\s+/g, ''));
  if (!pick) return { ...iface(base), ...own };
  const from = iface(pick[1]);
  const keys = [...pick[2].matchAll(/'(\w+)'/g)].map((k) => k[1]);
  return { ...Object.fromEntries(keys.map((k) => [k, from[k]])), ...own };
}

const literals = (type) => [...type.matchAll(/'([^']*)'/g)].map((m) => m[1]).sort();
const sorted = (o) => Object.keys(o).sort();

test('index.d.ts declares the options js/main/options.js checks, no more, no fewer', () => {
  assert.deepEqual(sorted(iface('LoadOptions')), sorted(LOAD_OPTIONS), 'LoadOptions');
  assert.deepEqual(sorted(iface('EstimateOptions')), sorted(ESTIMATE_OPTIONS), 'EstimateOptions');
  assert.deepEqual(sorted(iface('GenerateOptions')), sorted(GENERATE_OPTIONS), 'GenerateOptions');
  assert.deepEqual(sorted(iface('ChatOptions')), sorted(CHAT_OPTIONS), 'ChatOptions');
  const spec = iface('GenerateOptions').speculative;
  assert.deepEqual(
    sorted(members(braced(spec, spec.indexOf('{')))),
    sorted(SPECULATIVE_OPTIONS),
    'GenerateOptions.speculative',
  );
  const embed = /embed\(texts[^)]*opts\?: \{([^}]*)\}/.exec(dts);
  assert.deepEqual(sorted(members(embed[1])), sorted(EMBED_OPTIONS), 'embed options');
});

test("index.d.ts's enums are js/shared/abi.js's names", () => {
  const load = iface('LoadOptions');
  assert.deepEqual(literals(load.quant), Object.keys(quant).sort(), 'quant');
  assert.deepEqual(literals(load.streamWeights), Object.keys(stream).sort(), 'streamWeights');
  assert.deepEqual(literals(load.kvType), Object.keys(kvType).sort(), 'kvType');
  const code = /export type OxErrorCode =([^;]*);/.exec(dts)[1];
  assert.deepEqual(
    literals(code),
    Object.keys(codes)
      .filter((c) => c !== 'OK')
      .sort(),
    'OxErrorCode',
  );
  for (const m of dts.matchAll(/pooling\?: ([^;}]*)/g))
    assert.deepEqual(literals(m[1]), Object.keys(pooling).sort(), 'pooling');
});

test('each generation option that goes to C has the type js/shared/abi.js gives it', () => {
  const gen = iface('GenerateOptions');
  const spec = members(braced(gen.speculative, gen.speculative.indexOf('{')));
  for (const { option, type } of genOptions) {
    const path = option.split('.');
    const declared = path.length === 1 ? gen[path[0]] : spec[path[1]];
    assert.equal(declared, type === 'boolean' ? 'boolean' : 'number', option);
  }
});
