// JSON schema -> GBNF through the engine (src/decode/json_schema.c via model.jsonSchemaGrammar):
// a property test on random schemas of the supported subset and random documents, acceptance
// checked by the C grammar engine itself: every document the grammar accepts is ajv-valid, and
// every ajv-valid document written in the subset's shape (keys in the order of `properties`,
// no keys beyond them unless additionalProperties allows, compact or indented) is accepted.
// Also: the CLI's converter is the same one (byte-identical grammars), coded errors for the
// #33 cases, and the OpenAI layer's forced-call grammar comes from the engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import Ajv from 'ajv';
import { loadModel, OxError } from '../../js/main/index.js';
import { synth, tmpDir, requireDist } from '../oracle/fixtures.mjs';

let model, dir;
const accepts = (grammar, text) => model.engine.call('grammarAccepts', { grammar, text });

before(async () => {
  requireDist();
  dir = tmpDir('json-schema');
  model = await loadModel(synth(dir, { preset: 'tiny', type: 'q8_0', extra: ['--chat-tokens'] }), { threads: 1 });
});

after(() => model?.unload());

// ---- random schemas of the subset, and documents for them ----

const key = fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$/);
const scalar = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 6 }),
);
const typed = fc.oneof(
  fc.constant({ type: 'integer' }),
  fc.constant({ type: 'number' }),
  fc.constant({ type: 'boolean' }),
  fc.record(
    {
      type: fc.constant('string'),
      minLength: fc.integer({ min: 0, max: 3 }),
      maxLength: fc.integer({ min: 3, max: 8 }),
    },
    { requiredKeys: ['type'] },
  ),
);
const leaf = fc.oneof(
  typed,
  fc.constant({ type: 'null' }),
  fc.uniqueArray(scalar, { minLength: 1, maxLength: 4, selector: (v) => JSON.stringify(v) }).map((e) => ({ enum: e })),
  fc.oneof(scalar, fc.dictionary(key, scalar, { maxKeys: 2 })).map((c) => ({ const: c })),
);
const { schema: schemaArb } = fc.letrec((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('object'),
    tie('array'),
    tie('anyOf'),
    tie('nullable'),
  ),
  object: fc.dictionary(key, tie('schema'), { minKeys: 0, maxKeys: 4 }).chain((props) =>
    fc
      .record({
        required: fc.subarray(Object.keys(props)),
        extra: fc.oneof(fc.constant(undefined), fc.constant(false), fc.constant(true), leaf),
      })
      .map(({ required, extra }) => {
        const s = { type: 'object', properties: props, required };
        if (extra !== undefined) s.additionalProperties = extra;
        return s;
      }),
  ),
  array: fc
    .record({ items: tie('schema'), lo: fc.integer({ min: 0, max: 2 }), n: fc.option(fc.integer({ min: 0, max: 3 })) })
    .map(({ items, lo, n }) =>
      n === null ? { type: 'array', items, minItems: lo } : { type: 'array', items, minItems: lo, maxItems: lo + n },
    ),
  anyOf: fc.array(tie('schema'), { minLength: 1, maxLength: 3 }).map((a) => ({ anyOf: a })),
  nullable: typed.map((s) => ({ ...s, nullable: true })), // (ajv: nullable needs a type)
}));

// a value in the shape the grammar writes (keys in order) from the schema, valid or just off it
// (lengths and counts one beyond a bound, fractions for integers, values outside an enum)
function valueArb(s, depth = 0) {
  if (s.nullable) return fc.oneof(fc.constant(null), valueArb({ ...s, nullable: undefined }, depth));
  if (s.const !== undefined) return fc.oneof({ weight: 4, arbitrary: fc.constant(s.const) }, scalar);
  if (s.enum) return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...s.enum) }, scalar);
  if (s.anyOf) return fc.oneof(...s.anyOf.map((a) => valueArb(a, depth + 1)));
  switch (s.type) {
    case 'integer':
      return fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: -1e6, max: 1e6 }) },
        fc.integer({ min: -40, max: 40 }).map((x) => x + 0.5),
      );
    case 'number':
      return fc.oneof(
        fc.integer({ min: -1e6, max: 1e6 }),
        fc.integer({ min: -4000, max: 4000 }).map((x) => x / 8),
      );
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'string':
      return fc.string({ minLength: Math.max(0, (s.minLength ?? 0) - 1), maxLength: (s.maxLength ?? 8) + 1 });
    case 'array':
      return fc.array(valueArb(s.items, depth + 1), {
        minLength: Math.max(0, s.minItems - 1),
        maxLength: (s.maxItems ?? s.minItems + 3) + 1,
      });
    case 'object': {
      const entries = Object.entries(s.properties).map(([k, v]) => [
        k,
        fc.option(valueArb(v, depth + 1), { nil: undefined, freq: s.required.includes(k) ? 100 : 2 }),
      ]);
      const extra =
        s.additionalProperties === undefined || s.additionalProperties === false
          ? fc.constant({})
          : fc.dictionary(
              fc.stringMatching(/^x[a-z]{0,3}$/),
              s.additionalProperties === true ? scalar : valueArb(s.additionalProperties, depth + 1),
              { maxKeys: 2 },
            );
      return fc.tuple(fc.tuple(...entries.map(([, a]) => a)), extra).map(([vals, more]) => {
        const o = {};
        entries.forEach(([k], i) => vals[i] !== undefined && (o[k] = vals[i]));
        return Object.assign(o, more);
      });
    }
  }
  throw new Error(`no values for ${JSON.stringify(s)}`);
}

// documents: values for the schema (mostly valid), values for another part of it, any JSON
const docsArb = (s) =>
  fc
    .array(fc.oneof({ weight: 4, arbitrary: valueArb(s) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }), {
      minLength: 4,
      maxLength: 8,
    })
    .chain((vals) =>
      fc.tuple(
        ...vals.map((v) => fc.constantFrom(JSON.stringify(v), JSON.stringify(v, null, 1), ` ${JSON.stringify(v)}`)),
      ),
    );

test('property: what the grammar accepts is ajv-valid, and ajv-valid documents of the subset are accepted', async () => {
  const ajv = new Ajv({ strict: false });
  let accepted = 0,
    refused = 0;
  await fc.assert(
    // (through JSON: fc.dictionary's objects have no prototype, which ajv's const compares)
    fc.asyncProperty(
      schemaArb.map((s) => JSON.parse(JSON.stringify(s))).chain((s) => fc.tuple(fc.constant(s), docsArb(s))),
      async ([schema, docs]) => {
        const valid = ajv.compile(schema);
        const grammar = await model.jsonSchemaGrammar(schema);
        for (const doc of docs) {
          const ok = await accepts(grammar, doc);
          const parsed = JSON.parse(doc);
          // ajv-valid and in the grammar's shape: JSON.stringify writes keys in insertion order,
          // which valueArb makes the order of properties; fc.jsonValue's objects may have keys
          // the subset does not take (no additionalProperties: no other keys, as llama.cpp)
          const shaped = inShape(schema, parsed, doc.includes('\n'));
          if (ok)
            assert.ok(
              valid(parsed),
              `accepted but invalid: ${doc}\nschema ${JSON.stringify(schema)}\n${ajv.errorsText(valid.errors)}`,
            );
          else
            assert.ok(
              !(valid(parsed) && shaped),
              `valid but refused: ${doc}\nschema ${JSON.stringify(schema)}\n${grammar}`,
            );
          ok ? accepted++ : refused++;
        }
      },
    ),
    { numRuns: 120, seed: 3301 },
  );
  assert.ok(accepted > 100 && refused > 50, `accepted ${accepted}, refused ${refused}: both sides exercised`);
});

// whether a value takes the shape the grammar writes: object keys in the order of properties
// (extra keys after them, only where additionalProperties allows), numbers of at most 16 digits
// (integers without an exponent),
// const and enum values spelled compactly (indented: a document with newlines)
function inShape(s, v, indented) {
  if (s.const !== undefined || s.enum) return !indented || v === null || typeof v !== 'object';
  if (s.nullable && v === null) return true;
  if (s.anyOf) return s.anyOf.some((a) => inShape(a, v, indented));
  if (s.type === 'array') return Array.isArray(v) && v.every((x) => inShape(s.items, x, indented));
  if (s.type === 'object') {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
    const names = Object.keys(s.properties);
    const keys = Object.keys(v);
    const named = keys.filter((k) => k in s.properties);
    if (named.some((k, i) => i > 0 && names.indexOf(k) < names.indexOf(named[i - 1]))) return false;
    if (keys.slice(0, named.length).some((k) => !(k in s.properties))) return false;
    const extra = s.additionalProperties;
    if (keys.length > named.length && (extra === undefined || extra === false || keys.length - named.length > 17))
      return false;
    const extraOk = keys
      .slice(named.length)
      .every((k) => /^[^"\\\x00-\x1f]{1,64}$/.test(k) && (extra === true || inShape(extra, v[k], indented)));
    return extraOk && named.every((k) => inShape(s.properties[k], v[k], indented));
  }
  if (typeof v === 'number' && s.type === 'integer') return /^-?\d{1,16}$/.test(JSON.stringify(v));
  if (typeof v === 'number') return /^-?\d{1,16}(\.\d{1,16})?(e[-+]?\d{1,3})?$/i.test(JSON.stringify(v));
  return true;
}

test(
  'the CLI and the engine convert with the same code: identical grammars',
  { skip: !fs.existsSync(path.join(process.cwd(), 'build/oxinfer')) && 'build/oxinfer not built' },
  async () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', maxLength: 4 }, b: { anyOf: [{ type: 'integer' }, { enum: ['x', null] }] } },
      required: ['a'],
    };
    const file = path.join(dir, 'schema.json');
    fs.writeFileSync(file, JSON.stringify(schema));
    const cli = execFileSync(path.join(process.cwd(), 'build/oxinfer'), ['run', '--json-schema', file], {
      encoding: 'utf8',
    });
    assert.equal(cli, await model.jsonSchemaGrammar(schema));
    assert.ok(await accepts(cli, '{"a": "abcd", "b": null}'));
    const g4 = execFileSync(
      path.join(process.cwd(), 'build/oxinfer'),
      ['run', '--json-schema', file, '--tool-notation'],
      { encoding: 'utf8' },
    );
    assert.match(g4, /"<\|\\"\|>" g4-char1\{0,4\} "<\|\\"\|>"/);
  },
);

test('issue #33: $ref to a non-entry, bad percent-encoding and over-limit schemas are coded UNSUPPORTED errors naming the cause', async () => {
  const bad = [
    [{ $ref: '#/$defs/__proto__', $defs: {} }, /names no entry of \$defs/],
    [{ $ref: '#/$defs/%E0', $defs: { a: {} } }, /bad percent-encoding/],
    [{ type: 'string', maxLength: 5000 }, /maxLength 5000 is above 1024/],
    [{ anyOf: Array.from({ length: 2000 }, (_, i) => ({ const: i })) }, /anyOf of 2000 schemas \(at most 1024\)/],
    [{ anyOf: Array.from({ length: 80 }, () => ({ type: 'string', maxLength: 1000 })) }, /more than 16384 rules/],
    [{ type: 'string', pattern: 'a+' }, /keyword "pattern"/],
  ];
  for (const [schema, msg] of bad)
    await assert.rejects(
      model.jsonSchemaGrammar(schema),
      (e) => e instanceof OxError && e.code === 'UNSUPPORTED' && msg.test(e.message),
      JSON.stringify(schema).slice(0, 80),
    );
  // through the OpenAI layer: a 400 naming the keyword, and the model still answers
  const res = await model.fetch('http://oxinfer.local/v1/chat/completions', {
    method: 'POST',
    body: JSON.stringify({
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { schema: { $ref: '#/$defs/%E0' } } },
    }),
  });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, /bad percent-encoding/);
  await assert.rejects(model.jsonSchemaGrammar({}, { toolCalls: 1 }), (e) => e.code === 'RANGE');
  await assert.rejects(model.jsonSchemaGrammar(undefined), (e) => e.code === 'RANGE');
});

test("a forced call's grammar: the arguments in Gemma 4 notation, closable strings, more calls with parallel", async () => {
  const tools = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ];
  const one = await model.jsonSchemaGrammar(tools, { toolCalls: true, afterName: true, parallel: false });
  assert.match(one, /^root ::= get-weather "<tool_call\|>"\n/);
  assert.match(one, /^get-weather ::= \("\{" ws \("city" ws ":" ws city\) ws "\}"\)$/m);
  assert.match(one, /^city ::= \("<\|\\"\|>" g4-char\* "<"\* "<\|\\"\|>"\)$/m);
  const more = await model.jsonSchemaGrammar(tools, { toolCalls: true, parallel: true });
  assert.match(more, /\("<\|tool_call>call:" "get_weather" [^\n]*\)\{0,8\}/);
});

// The demo model's 1,024-token vocabulary has no <|"|> token: a string closes with five
// ordinary tokens starting with `<`, which this model, trained on plain text, hardly ever samples
// mid-string (issue #33: forced calls ran to max_tokens). The grammar admits the close after any
// content (a trailing `<` included); maxLength is the bound that makes the call end.
test("demo model: a forced call's string can always close, and with maxLength it does", async () => {
  const demo = await loadModel(path.join(process.cwd(), 'web/models/oxinfer-demo.gguf'), { threads: 1 });
  try {
    const tool = (city) => [
      {
        type: 'function',
        function: { name: 'get_weather', parameters: { type: 'object', properties: { city }, required: ['city'] } },
      },
    ];
    const g = await demo.jsonSchemaGrammar(tool({ type: 'string' }), { toolCalls: true, afterName: true });
    for (const s of ['Paris', 'a<', '<<', 'a<b', ''])
      assert.ok(await demo.engine.call('grammarAccepts', { grammar: g, text: `{city:<|"|>${s}<|"|>}<tool_call|>` }), s);
    assert.ok(!(await demo.engine.call('grammarAccepts', { grammar: g, text: '{city:<|"|>a<|b<|"|>}<tool_call|>' })));
    for (const seed of [1, 2, 3]) {
      const r = await demo.createChatCompletion({
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: tool({ type: 'string', maxLength: 16 }),
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        parallel_tool_calls: false,
        max_tokens: 64,
        seed,
      });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c.message));
      assert.ok([...JSON.parse(c.message.tool_calls[0].function.arguments).city].length <= 16);
    }
  } finally {
    await demo.unload();
  }
});
