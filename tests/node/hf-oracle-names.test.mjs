// The HF -> GGUF tensor names against an outside oracle: llama.cpp's gguf-py (tensor_mapping.py
// and constants.py, pure Python) with the renames of convert_hf_to_gguf's Gemma 4 class
// (conversion/gemma.py) on top. Two checks: every entry of our map (src/formats/tensors.c,
// global_map and layer_map) maps as llama.cpp's converter would map it; and every tensor of the
// HF checkpoints our generator writes (presets tiny, moe, keqv) gets, in our loader (`oxinfer
// inspect` of the HF directory, same order as the safetensors header), the name and shape the
// converter gives it — so the generator's HF names, which the HF-vs-GGUF logit tests rest on,
// are the real checkpoints' names too.
//
// convert_hf_to_gguf.py itself does not run here: it needs torch and, for the Gemma 4 vocab,
// transformers (not packaged by Debian); the name map is what can be checked offline.
// Needs python3, llama.cpp's source (tools/llamacpp.sh; $OX_LLAMACPP_DIR or ~/.cache/llamacpp)
// and the CLI ($OX_CLI or build/oxinfer); skipped with the reason when one is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../../tools/serve.mjs';
import { cli, CLI, tmpDir } from '../oracle/fixtures.mjs';

const GGUF_PY = path.join(
  process.env.OX_LLAMACPP_DIR ?? path.join(os.homedir(), '.cache', 'llamacpp'),
  'src',
  'gguf-py',
  'gguf',
);
const N_BLOCKS = 64;

// HF names on stdin (JSON) -> {hf: gguf name | null (skipped, as the converter skips towers)}.
// The package's __init__ (numpy, yaml) is bypassed: only constants and tensor_mapping load.
const ORACLE = String.raw`
import importlib, json, re, sys, types
pkg = types.ModuleType('gguf'); pkg.__path__ = [sys.argv[1]]; sys.modules['gguf'] = pkg
c = importlib.import_module('gguf.constants'); tm = importlib.import_module('gguf.tensor_mapping')
arch = c.MODEL_ARCH.GEMMA4
tmap = tm.TensorNameMap(arch, int(sys.argv[2]))
def fmt(t, bid, suffix):
    return c.TENSOR_NAMES[t].format(bid=bid) + suffix
def convert(name):
    # Gemma4Model.filter_tensors
    if name.endswith('per_dim_scale') or name.endswith('layer_scalar'): name += '.weight'
    if '.experts.' in name and not name.endswith(('.weight', '.weight_scale', '.weight_scale_2', '.input_scale')): name += '.weight'
    # TextModel.filter_tensors: the towers are not the text model's
    if any(k in name for k in ('vision_', 'audio_', 'visual.', 'vision.', 'audio.', 'projector.')): return None
    # ModelBase.filter_tensors
    name = name.replace('language_model.', '')
    bid = re.search(r'\.layers\.(\d+)\.', name); bid = bid and int(bid.group(1))
    # Gemma4Model.modify_tensors
    if name.endswith('router.scale'): return fmt(c.MODEL_TENSOR.FFN_GATE_INP, bid, '.scale')
    if '.per_expert_scale' in name: return fmt(c.MODEL_TENSOR.FFN_DOWN_EXP, bid, '.scale')
    got = tmap.get_name(name, try_suffixes=('.weight', '.bias'))
    if got is None: raise SystemExit('llama.cpp cannot map ' + name)
    return got
print(json.dumps({n: convert(n) for n in json.load(sys.stdin)}))
`;

function oracle(names) {
  const r = spawnSync('python3', ['-c', ORACLE, GGUF_PY, String(N_BLOCKS)], {
    input: JSON.stringify(names),
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`gguf-py oracle: ${r.error?.message ?? r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}

function why() {
  if (spawnSync('python3', ['--version']).status !== 0) return 'python3 not found';
  if (!fs.existsSync(path.join(GGUF_PY, 'tensor_mapping.py')))
    return `${GGUF_PY}/tensor_mapping.py not found (tools/llamacpp.sh unpacks llama.cpp's source)`;
  return null;
}

// {hf: ours} from the two tables of src/formats/tensors.c, HF names spelled as checkpoints do
function ourTable() {
  const src = fs.readFileSync(path.join(ROOT, 'src', 'formats', 'tensors.c'), 'utf8');
  const table = (id) => {
    const body = new RegExp(`${id}\\[\\]\\[2\\] = \\{([\\s\\S]*?)\\n\\};`).exec(src)?.[1];
    assert.ok(body, `${id} not found in src/formats/tensors.c`);
    return [...body.matchAll(/\{"([^"]+)", "([^"]+)"\}/g)].map((m) => [m[1], m[2]]);
  };
  const out = {};
  for (const [hf, ours] of table('global_map')) out[`model.language_model.${hf}`] = ours;
  for (const bid of [0, 7, N_BLOCKS - 1])
    for (const [hf, ours] of table('layer_map')) out[`model.language_model.layers.${bid}.${hf}`] = `blk.${bid}.${ours}`;
  return out;
}

test('every entry of our HF name map maps as llama.cpp converts it', (t) => {
  const reason = why();
  if (reason) return t.skip(reason);
  const ours = ourTable();
  assert.ok(Object.keys(ours).length >= 6 + 3 * 25, `${Object.keys(ours).length} entries read from tensors.c`);
  const theirs = oracle(Object.keys(ours));
  const wrong = Object.keys(ours)
    .filter((k) => theirs[k] !== ours[k])
    .map((k) => `${k}: ours ${ours[k]}, llama.cpp ${theirs[k]}`);
  assert.deepEqual(wrong, []);
  // and towers are left out by both
  assert.deepEqual(
    oracle([
      'model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight',
      'model.embed_audio.embedding_projection.weight',
    ]),
    {
      'model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight': null,
      'model.embed_audio.embedding_projection.weight': null,
    },
  );
});

// the safetensors header: [{name, shape}] in file order
function header(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    fs.readSync(fd, len, 0, 8, 0);
    const json = Buffer.alloc(Number(len.readBigUInt64LE()));
    fs.readSync(fd, json, 0, json.length, 8);
    const h = JSON.parse(json.toString('utf8'));
    return Object.entries(h)
      .filter(([k]) => k !== '__metadata__')
      .sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0])
      .map(([name, v]) => ({ name, shape: v.shape }));
  } finally {
    fs.closeSync(fd);
  }
}

// our loader's directory: [{name, ne}] as `oxinfer inspect` lists it
function inspect(dir) {
  const out = cli(['inspect', ...fs.readdirSync(dir).map((f) => path.join(dir, f))]);
  return out
    .split('\ntensors:\n')[1]
    .split('\n')
    .slice(1)
    .filter((l) => /^\s+\S+\s+\S+\s+\[/.test(l))
    .map((l) => /^\s+(\S+)\s+\S+\s+\[([\d, ]+)\]/.exec(l))
    .map((m) => ({ name: m[1], ne: m[2].split(',').map(Number) }));
}

test('the tensors of our HF checkpoints load under the names and shapes llama.cpp gives them', (t) => {
  const reason = why() ?? (fs.existsSync(CLI) ? null : `${CLI} not found`);
  if (reason) return t.skip(reason);
  const dir = tmpDir('hf-oracle');
  try {
    for (const preset of ['tiny', 'moe', 'keqv']) {
      const hf = path.join(dir, preset);
      cli(['synth', '--preset', preset, '--type', 'f32', '--format', 'hf', '-o', hf]);
      const h = header(path.join(hf, 'model.safetensors'));
      const theirs = oracle(h.map((x) => x.name));
      const ours = inspect(hf);
      assert.equal(ours.length, h.length, `${preset}: ${ours.length} tensors loaded, ${h.length} in the checkpoint`);
      h.forEach((x, i) => {
        assert.equal(ours[i].name, theirs[x.name], `${preset}: ${x.name}`);
        assert.deepEqual(ours[i].ne, [...x.shape].reverse(), `${preset}: shape of ${x.name}`);
      });
      if (preset === 'moe')
        assert.ok(
          h.some((x) => x.name.endsWith('router.per_expert_scale')),
          'the moe checkpoint has the renamed tensors',
        );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
