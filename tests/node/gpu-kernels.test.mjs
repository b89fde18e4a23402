// The WebGPU kernels (js/gpu/) against the C engine's scalar references (src/kernels/*.c via
// tests/node/gpu/ref_helper.c), on every software adapter present: lavapipe 25 with its
// optional features (shader-f16, subgroups, dot4I8Packed) and SwiftShader with them all off.
// tools/setup.sh test installs both; the suite skips (visibly) only where no adapter opens.
//
// Tolerances: the integer sums of the quantized dots are the C engine's, the float products
// per block too; only the order of the float sums differs, so |gpu - ref| <= 1e-5 * sum|w x|
// (a wrong nibble, scale or offset moves a result by a whole term). Activation quantization:
// scales equal to 1e-6, a quant one off next to a .5 boundary in at most 1 % of them (WGSL
// division need not be correctly rounded). Row ops: 1e-5 relative (WGSL exp / sqrt are not
// libm's).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { nodeGpu, openDevice } from '../../js/gpu/device.js';
import { createKernels, splitRows, ropeTable, GPU_TYPES, actLayout, gpuRowBytes } from '../../js/gpu/kernels.js';
import {
  softwareAdapters,
  buildRefHelper,
  bufferOf,
  zeros,
  runAndRead,
  rng,
  f32,
  f16Bits,
  f16Value,
} from './gpu/harness.mjs';

const adapters = softwareAdapters();
let ref;

// Random weight bytes (every bit pattern of the packed quants, scales included) with the f16
// super-block scales set to sane values, so no block is Inf/NaN.
const D_FIELDS = { 2: [0], 8: [0], 20: [0], 12: [0, 2], 13: [0, 2], 14: [208], 23: [0] };
function randomWeights(type, rows, cols, r) {
  if (type === 0 || type === 1 || type === 30) {
    const x = new Float32Array(rows * cols).map(() => r() * 2 - 1);
    return type === 0 ? new Uint8Array(x.buffer) : ref('quant', [type, rows * cols], x);
  }
  const T = GPU_TYPES[type],
    nb = (rows * cols) / T.be;
  const b = new Uint8Array(nb * T.bb).map(() => (r() * 256) | 0);
  const dv = new DataView(b.buffer);
  for (let i = 0; i < nb; i++)
    for (const o of D_FIELDS[type])
      dv.setUint16(i * T.bb + o, f16Bits(0.002 + r() * 0.01) ^ (r() < 0.3 ? 0x8000 : 0), true);
  return b;
}

// The GPU's quantized activations in GGML's block layout (Q8_0 / Q8_K), for the C dot.
function toGgmlAct(act, words, cols, nTok) {
  const u = new Uint32Array(words.buffer, words.byteOffset, words.byteLength / 4);
  const L = actLayout(act, cols, nTok),
    qs = new Int8Array(u.buffer, u.byteOffset, nTok * cols);
  const fd = new Float32Array(u.buffer, u.byteOffset);
  const be = act === 'q8_0' ? 32 : 256,
    bb = act === 'q8_0' ? 34 : 292,
    nb = (nTok * cols) / be;
  const out = new Uint8Array(nb * bb),
    dv = new DataView(out.buffer);
  for (let g = 0; g < nb; g++) {
    const d = fd[L.dOff + g],
      o = g * bb;
    if (act === 'q8_0') {
      dv.setUint16(o, f16Bits(d), true);
      for (let j = 0; j < 32; j++) dv.setInt8(o + 2 + j, qs[g * 32 + j]);
    } else {
      dv.setFloat32(o, d, true);
      for (let j = 0; j < 256; j++) dv.setInt8(o + 4 + j, qs[g * 256 + j]);
      for (let s = 0; s < 16; s++) {
        let sum = 0;
        for (let j = 0; j < 16; j++) sum += qs[g * 256 + s * 16 + j];
        dv.setInt16(o + 260 + 2 * s, sum, true);
      }
    }
  }
  return out;
}

// sum_c |w[r][c] x[t][c]| per (t, r), with the C dequantizer: the scale of the tolerance.
function magnitudes(type, w, rows, cols, xs, nTok) {
  const wd = type === 0 ? f32(w) : f32(ref('deq', [type, rows * cols], w));
  const m = new Float64Array(nTok * rows);
  for (let t = 0; t < nTok; t++)
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let c = 0; c < cols; c++) s += Math.abs(wd[r * cols + c] * xs[t * cols + c]);
      m[t * rows + r] = s;
    }
  return m;
}

function assertClose(got, want, tol, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const t = typeof tol === 'number' ? tol : tol[i];
    if (!(Math.abs(got[i] - want[i]) <= t))
      assert.fail(`${what}: [${i}] = ${got[i]}, reference ${want[i]} (tolerance ${t})`);
  }
}

const rel = (want, r, floor = 1e-6) => Array.from(want, (v) => Math.abs(v) * r + floor);

if (!adapters.length)
  test('WebGPU kernels', { skip: 'no software Vulkan driver (tools/setup.sh test installs one)' }, () => {});

for (const A of adapters) {
  describe(`WebGPU kernels on ${A.name}`, () => {
    let gpu,
      device,
      caps,
      k,
      skip = '';
    before(async () => {
      ref ??= buildRefHelper();
      gpu = await nodeGpu([`adapter=${A.select}`]);
      if (!gpu) {
        skip = 'the webgpu package is not installed';
        return;
      }
      try {
        ({ device, caps } = await openDevice(gpu, { allowFallback: true, disable: A.disable }));
      } catch (e) {
        skip = `no adapter: ${e.message}`;
        return;
      }
      k = createKernels(device, caps);
    });
    after(async () => {
      await device?.queue.onSubmittedWorkDone();
      device?.destroy();
      gpu = null;
    });
    const it = (name, fn) => test(name, async (t) => (skip ? t.skip(skip) : fn(t)));

    it('openDevice refuses a fallback adapter unless asked, and reports what it enabled', async () => {
      await assert.rejects(openDevice(gpu), (e) => e.code === 'UNSUPPORTED' && /fallback/.test(e.message));
      assert.equal(caps.fallback, true);
      for (const f of A.disable)
        assert.equal(caps[{ 'shader-f16': 'f16', subgroups: 'subgroups', dot4: 'dot4' }[f]], false);
      assert.ok(caps.maxBinding >= 128 << 20);
    });

    it('bad inputs get OxErrors with codes, before anything is encoded', async () => {
      const code = (c) => (e) => e.code === c && /js\/gpu\/kernels\.js/.test(e.message);
      assert.throws(() => gpuRowBytes(3, 64), code('UNSUPPORTED')); // Q4_1: no GPU kernel
      assert.throws(() => gpuRowBytes(12, 300), code('FORMAT'));
      assert.throws(() => splitRows(8, 10, 1024, 1000), code('RANGE'));
      assert.throws(() => k.uploadWeight({ type: 8, rows: 4, cols: 32, data: new Uint8Array(100) }), code('TRUNCATED'));
      const enc = device.createCommandEncoder(),
        pass = enc.beginComputePass(),
        B = zeros(device, 1024);
      assert.throws(() => k.quantize(pass, { type: 12, x: B, act: B, cols: 100, nTok: 1 }), code('FORMAT'));
      const w = k.uploadWeight({ type: 8, rows: 4, cols: 32, data: new Uint8Array(4 * 34) });
      assert.throws(() => k.linear(pass, { w, x: B, act: B, y: B, nTok: 0 }), code('RANGE'));
      assert.throws(() => k.matmul(pass, { w, x: B, y: B, nTok: 1 }), code('CONFIG')); // no act for Q8_0
      assert.throws(
        () => k.moeMatmul(pass, { w, act: B, sel: B, y: B, nSlots: 3, xDiv: 2, expertRows: 2 }),
        code('CONFIG'),
      );
      assert.throws(() => k.elt(pass, 'nope', { a: B, n: 4 }), code('CONFIG'));
      assert.throws(() => k.elt(pass, 'add', { a: B, n: 4 }), code('CONFIG'));
      assert.throws(
        () => k.kvWrite(pass, { kv: 'q4_0', input: B, k: 0, v: 0, kc: B, vc: B, width: 64, nTok: 1, pos: 0 }),
        code('UNSUPPORTED'),
      );
      assert.throws(
        () => k.kvWrite(pass, { kv: 'q8_0', input: B, k: 0, v: 0, kc: B, vc: B, width: 32, nTok: 1, pos: 0 }),
        code('CONFIG'),
      );
      assert.throws(
        () =>
          k.attention(pass, {
            kv: 'f32',
            q: B,
            kc: B,
            vc: B,
            out: B,
            scores: B,
            nTok: 1,
            nh: 3,
            hd: 8,
            nKv: 2,
            pos: 0,
            sStride: 1,
          }),
        code('CONFIG'),
      );
      assert.throws(
        () =>
          k.attention(pass, {
            kv: 'f32',
            q: B,
            kc: B,
            vc: B,
            out: B,
            nTok: 1,
            nh: 2,
            hd: 8,
            nKv: 2,
            pos: 0,
            sStride: 1,
          }),
        code('CONFIG'),
      );
      assert.throws(
        () => k.moeRoute(pass, { z: B, expertScale: B, sel: B, weights: B, nTok: 1, nExp: 4, topK: 5 }),
        code('CONFIG'),
      );
      assert.throws(() => k.rmsnorm(pass, { x: { buffer: B, offset: -1 }, n: 4, rows: 1, eps: 1e-6 }), code('RANGE'));
      pass.end();
      enc.finish();
      k.resetParams();
      for (const b of [B, ...w.parts.map((q) => q.buffer)]) b.destroy();
    });

    it('a dispatch of more than 65535 workgroups spreads over the grid (x, z)', async () => {
      const n = 65536 * 64 + 100,
        a = new Float32Array(n).map((_, i) => (i % 1000) - 500);
      const A = bufferOf(device, a);
      const got = f32(await runAndRead(k, (pass) => k.elt(pass, 'scale', { a: A, n: n - 50, s0: 0.5 }), A));
      for (let i = 0; i < n; i++) if (got[i] !== (i < n - 50 ? a[i] * 0.5 : a[i])) assert.fail(`[${i}] = ${got[i]}`);
    });

    for (const act of ['q8_0', 'q8_k']) {
      it(`quantize f32 -> ${act} as the C engine`, async () => {
        const r = rng(7),
          cols = 512,
          nTok = 3;
        const x = new Float32Array(nTok * cols).map(() => (r() * 2 - 1) * (r() < 0.05 ? 8 : 1));
        x.fill(0, cols, cols + 256); // an all-zero block (d = 0)
        const type = act === 'q8_0' ? 8 : 12;
        const L = actLayout(act, cols, nTok),
          X = bufferOf(device, x),
          Q = zeros(device, L.words * 4);
        const got = await runAndRead(k, (pass) => k.quantize(pass, { type, x: X, act: Q, cols, nTok }), Q);
        const mine = toGgmlAct(act, got, cols, nTok);
        const want = ref('quant', [act === 'q8_0' ? 8 : 15, nTok * cols], x);
        assert.equal(mine.length, want.length);
        const bb = act === 'q8_0' ? 34 : 292,
          hd = act === 'q8_0' ? 2 : 4;
        const dm = new DataView(mine.buffer),
          dw = new DataView(want.buffer);
        let off = 0,
          n = 0;
        for (let o = 0; o < want.length; o += bb) {
          const a = act === 'q8_0' ? f16Value(dm.getUint16(o, true)) : dm.getFloat32(o, true);
          const b = act === 'q8_0' ? f16Value(dw.getUint16(o, true)) : dw.getFloat32(o, true);
          assert.ok(Math.abs(a - b) <= Math.abs(b) * 1e-6, `block ${o / bb}: d ${a} vs ${b}`);
          for (let j = 0; j < (act === 'q8_0' ? 32 : 256); j++, n++) {
            const qa = dm.getInt8(o + hd + j),
              qb = dw.getInt8(o + hd + j);
            assert.ok(Math.abs(qa - qb) <= 1, `block ${o / bb} quant ${j}: ${qa} vs ${qb}`);
            off += qa !== qb;
          }
        }
        assert.ok(off <= n / 100, `${off} of ${n} quants differ`);
      });
    }

    // Each type: rows not a multiple of the workgroup's rows, several blocks per row, decode
    // (1 token) and a batch not a multiple of the token tile (6 in a tile of 8); Q8_0 and Q4_K
    // also a verify-sized batch (3, tile of 4) and two tiles of 8 (11).
    const COLS = { 0: 72, 1: 72, 30: 72, 8: 96, 2: 96, 20: 96, 12: 512, 13: 512, 14: 512, 23: 512 };
    for (const type of [0, 1, 30, 8, 2, 20, 12, 13, 14, 23]) {
      for (const nTok of type === 8 || type === 12 ? [1, 3, 6, 11] : [1, 6]) {
        it(`matmul ${GPU_TYPES[type].name}: 37 rows x ${COLS[type]}, ${nTok} token(s), against ox_vec_dot_ref`, async () => {
          await checkMatmul(type, 37, COLS[type], nTok, 100 + type);
        });
      }
    }

    it('matmul Q8_0 split by rows across buffers (a small binding limit: 4 parts), into a wider y', async () => {
      const rows = 37,
        cols = 96,
        rb = gpuRowBytes(8, cols);
      const limit = 10 * rb + 8;
      assert.equal(splitRows(8, rows, cols, limit).length, 4);
      await checkMatmul(8, rows, cols, 6, 9, { maxBinding: limit, yStride: 41, yOff: 3 });
    });

    it('matmul Q4_K split by rows (3 parts), one token', async () => {
      await checkMatmul(12, 37, 512, 1, 11, { maxBinding: 13 * gpuRowBytes(12, 512) + 4 });
    });

    async function checkMatmul(type, rows, cols, nTok, seed, { maxBinding, yStride = rows, yOff = 0 } = {}) {
      const r = rng(seed),
        T = GPU_TYPES[type];
      const wb = randomWeights(type, rows, cols, r);
      const x = new Float32Array(nTok * cols).map(() => r() * 2 - 1);
      const w = k.uploadWeight({ type, rows, cols, data: wb, maxBinding });
      if (maxBinding) assert.ok(w.parts.length > 1);
      const X = bufferOf(device, x),
        words = k.actWords(type, cols, nTok),
        Q = zeros(device, Math.max(4, words) * 4);
      const Y = zeros(device, (yOff + nTok * yStride) * 4);
      const out = f32(
        await runAndRead(
          k,
          (pass) => k.linear(pass, { w, x: X, act: Q, y: { buffer: Y, offset: yOff, stride: yStride }, nTok }),
          Y,
        ),
      );
      let act = x,
        actBytes = new Uint8Array(x.buffer);
      if (T.act !== 'f32') {
        const got = await runAndRead(k, () => {}, Q, words * 4);
        actBytes = toGgmlAct(T.act, got, cols, nTok);
        act = f32(ref('deq', [T.act === 'q8_0' ? 8 : 15, nTok * cols], actBytes));
      }
      const want = f32(ref('dot', [type, rows, cols, nTok], new Uint8Array([...wb, ...actBytes])));
      const mag = magnitudes(type, wb, rows, cols, act, nTok);
      const got = new Float32Array(nTok * rows);
      for (let t = 0; t < nTok; t++) for (let i = 0; i < rows; i++) got[t * rows + i] = out[yOff + t * yStride + i];
      assertClose(
        got,
        want,
        Array.from(mag, (m) => m * 1e-5 + 1e-30),
        `${T.name} y`,
      );
      for (const p of w.parts) p.buffer.destroy();
    }

    it('rmsnorm: with weight, without, per head, in place and into another buffer', async () => {
      const r = rng(3),
        n = 200,
        rows = 3;
      const x = new Float32Array(rows * n).map(() => r() * 4 - 2),
        wv = new Float32Array(n).map(() => r() + 0.5);
      const want = (xs, hasW, len) =>
        f32(ref('rms', [len, 1e-6, hasW ? 1 : 0], hasW ? new Float32Array([...wv.subarray(0, len), ...xs]) : xs));
      for (const hasW of [true, false]) {
        const X = bufferOf(device, x),
          W = bufferOf(device, wv),
          Y = zeros(device, (rows * n + 5) * 4);
        const got = f32(
          await runAndRead(
            k,
            (pass) => k.rmsnorm(pass, { x: X, y: { buffer: Y, offset: 5 }, w: hasW ? W : null, n, rows, eps: 1e-6 }),
            Y,
          ),
        );
        for (let i = 0; i < rows; i++) {
          const ref1 = want(x.subarray(i * n, (i + 1) * n), hasW, n);
          assertClose(got.subarray(5 + i * n, 5 + (i + 1) * n), ref1, rel(ref1, 1e-5), `rms row ${i} w=${hasW}`);
        }
      }
      // per head: 2 tokens x 4 heads of 40 inside rows of 200 (the rest untouched), in place
      const X = bufferOf(device, x),
        W = bufferOf(device, wv);
      const got = f32(
        await runAndRead(
          k,
          (pass) => k.rmsnorm(pass, { x: { buffer: X, offset: 40 }, w: W, n: 40, rows: 8, eps: 1e-6 }),
          X,
        ),
      );
      assertClose(got.subarray(0, 40), x.subarray(0, 40), 0, 'untouched lanes');
      for (let h = 0; h < 8; h++) {
        const o = 40 + h * 40,
          ref1 = want(x.subarray(o, o + 40), true, 40);
        assertClose(got.subarray(o, o + 40), ref1, rel(ref1, 1e-5), `head ${h}`);
      }
    });

    it('rope: all pairs (sliding layers) and proportional partial rotation (full layers), large positions', async () => {
      const r = rng(5);
      for (const [hd, pairs, base, factor] of [
        [64, 32, 10000, 1],
        [128, 16, 1e6, 1],
        [64, 40, 10000, 8],
      ]) {
        const nTok = 3,
          nh = 2,
          positions = [0, 7, 131071];
        const x = new Float32Array(nTok * nh * hd).map(() => r() * 2 - 1);
        const X = bufferOf(device, x),
          CS = bufferOf(device, ropeTable(positions, hd, pairs, base, factor));
        const got = f32(
          await runAndRead(
            k,
            (pass) => k.rope(pass, { x: X, cs: CS, hd, nPairs: pairs, nHeads: nh, nTok, tokStride: nh * hd }),
            X,
          ),
        );
        for (let t = 0; t < nTok; t++)
          for (let h = 0; h < nh; h++) {
            const o = (t * nh + h) * hd,
              want = f32(ref('rope', [hd, positions[t], pairs, base, factor], x.slice(o, o + hd)));
            assertClose(got.subarray(o, o + hd), want, 2e-6, `rope hd ${hd} pairs ${pairs} t ${t} h ${h}`);
          }
      }
    });

    it('softmax over rows (router probabilities)', async () => {
      const r = rng(8),
        n = 130,
        rows = 3;
      const x = new Float32Array(rows * n).map(() => r() * 20 - 10);
      const X = bufferOf(device, x);
      const got = f32(await runAndRead(k, (pass) => k.softmax(pass, { x: X, n, rows }), X));
      for (let i = 0; i < rows; i++) {
        const want = f32(ref('softmax', [n], x.slice(i * n, (i + 1) * n)));
        assertClose(got.subarray(i * n, (i + 1) * n), want, rel(want, 2e-5, 1e-9), `softmax row ${i}`);
      }
    });

    it('elementwise: GELU gate (against ox_geglu), add, axpby, scale, soft-cap, in strided rows', async () => {
      const r = rng(9),
        n = 300;
      const g = new Float32Array(n).map(() => r() * 12 - 6),
        u = new Float32Array(n).map(() => r() * 2 - 1);
      const want = f32(ref('geglu', [n], new Float32Array([...g, ...u])));
      const G = bufferOf(device, g),
        U = bufferOf(device, u);
      const got = f32(await runAndRead(k, (pass) => k.elt(pass, 'geglu', { a: G, b: U, n }), G));
      assertClose(got, want, rel(want, 2e-6, 1e-7), 'geglu');

      const cases = {
        add: (a, b) => a + b,
        axpby: (a, b) => Math.fround((a + b * 16) * Math.SQRT1_2),
        scale: (a) => a * 0.75,
        softcap: (a) => 30 * Math.tanh(a / 30),
      };
      for (const [op, f] of Object.entries(cases)) {
        // a: 4 rows of 50 inside rows of 60; b: rows of 50 inside rows of 70
        const a = new Float32Array(240).map(() => r() * 200 - 100),
          b = new Float32Array(280).map(() => r() * 2 - 1);
        const A = bufferOf(device, a),
          B = bufferOf(device, b);
        const res = f32(
          await runAndRead(
            k,
            (pass) =>
              k.elt(pass, op, {
                a: A,
                b: B,
                n: 200,
                cols: 50,
                aStride: 60,
                bStride: 70,
                s0: op === 'softcap' ? 30 : op === 'scale' ? 0.75 : 16,
                s1: Math.SQRT1_2,
              }),
            A,
          ),
        );
        for (let i = 0; i < 240; i++) {
          const row = Math.floor(i / 60),
            c = i % 60;
          const w = c < 50 ? f(a[i], b[row * 70 + c]) : a[i];
          assert.ok(Math.abs(res[i] - w) <= Math.abs(w) * 2e-6 + 1e-6, `${op} [${i}] = ${res[i]}, want ${w}`);
        }
      }
    });

    it('PLE as forward.c: inputs (proj / sqrt(H), per-layer norm, (ctx + row sqrt(P)) / sqrt(2)) and a layer injection', async () => {
      const r = rng(51),
        nTok = 2,
        H = 64,
        P = 32,
        L = 3,
        LP = L * P,
        eps = 1e-6;
      const x = new Float32Array(nTok * H).map(() => r() * 2 - 1);
      const wplm = new Float32Array(LP * H).map(() => r() * 0.2 - 0.1),
        norm = new Float32Array(P).map(() => r() + 0.5);
      const rows = new Float32Array(nTok * LP).map(() => r() * 0.1 - 0.05);
      const wgate = new Float32Array(P * H).map(() => r() * 0.2 - 0.1),
        wproj = new Float32Array(H * P).map(() => r() * 0.2 - 0.1);
      const post = new Float32Array(H).map(() => r() + 0.5),
        l = 1;
      const up = (type, a, rws, cols) => k.uploadWeight({ type, rows: rws, cols, data: new Uint8Array(a.buffer) });
      const Wplm = up(0, wplm, LP, H),
        Wg = up(0, wgate, P, H),
        Wp = up(0, wproj, H, P);
      const X = bufferOf(device, x),
        PLE = zeros(device, nTok * LP * 4),
        ROW = bufferOf(device, rows),
        NORM = bufferOf(device, norm);
      const PG = zeros(device, nTok * P * 4),
        PU = zeros(device, nTok * H * 4),
        POST = bufferOf(device, post);
      const got = f32(
        await runAndRead(
          k,
          (pass) => {
            k.linear(pass, { w: Wplm, x: X, y: PLE, nTok });
            k.elt(pass, 'scale', { a: PLE, n: nTok * LP, s0: 1 / Math.sqrt(H) });
            k.rmsnorm(pass, { x: PLE, w: NORM, n: P, rows: nTok * L, eps });
            k.elt(pass, 'axpby', { a: PLE, b: ROW, n: nTok * LP, s0: Math.sqrt(P), s1: 1 / Math.sqrt(2) });
            k.linear(pass, { w: Wg, x: X, y: PG, nTok });
            k.elt(pass, 'geglu', {
              a: PG,
              b: { buffer: PLE, offset: l * P },
              n: nTok * P,
              cols: P,
              aStride: P,
              bStride: LP,
            });
            k.linear(pass, { w: Wp, x: PG, y: PU, nTok });
            k.rmsnorm(pass, { x: PU, w: POST, n: H, rows: nTok, eps });
            k.elt(pass, 'add', { a: X, b: PU, n: nTok * H });
          },
          X,
        ),
      );
      // the same steps on the CPU: matmuls in double, the row ops by the C helper
      const mm = (w, rws, cols, v) =>
        Float32Array.from({ length: rws }, (_, i) =>
          w.subarray(i * cols, (i + 1) * cols).reduce((s, wv, c) => s + wv * v[c], 0),
        );
      for (let t = 0; t < nTok; t++) {
        const xt = x.subarray(t * H, (t + 1) * H);
        const ple = mm(wplm, LP, H, xt).map((v) => v * Math.fround(1 / Math.sqrt(H)));
        for (let j = 0; j < L; j++)
          ple.set(
            f32(ref('rms', [P, eps, 1], new Float32Array([...norm, ...ple.subarray(j * P, (j + 1) * P)]))),
            j * P,
          );
        const pl = ple.map(
          (v, i) => (v + rows[t * LP + i] * Math.fround(Math.sqrt(P))) * Math.fround(1 / Math.sqrt(2)),
        );
        const g = f32(
          ref('geglu', [P], new Float32Array([...mm(wgate, P, H, xt), ...pl.subarray(l * P, (l + 1) * P)])),
        );
        const pu = f32(ref('rms', [H, eps, 1], new Float32Array([...post, ...mm(wproj, H, P, g)])));
        const want = xt.map((v, i) => v + pu[i]);
        assertClose(got.subarray(t * H, (t + 1) * H), want, 2e-5, `token ${t} after the injection`);
      }
    });

    it('split attention (keys in chunks over workgroups, then merged) over 600 keys, full and windowed, matches the reference', async () => {
      const r = rng(61),
        nh = 4,
        nKv = 2,
        hd = 32,
        width = nKv * hd,
        N = 600,
        nTok = 2,
        pos = N - nTok;
      const kin = new Float32Array(N * width).map(() => r() * 2 - 1),
        vin = new Float32Array(N * width).map(() => r() * 2 - 1);
      const q = new Float32Array(nTok * nh * hd).map(() => r() * 2 - 1);
      const KC = zeros(device, N * width * 2),
        VC = zeros(device, N * width * 2),
        IN = bufferOf(device, new Float32Array([...kin, ...vin]));
      await runAndRead(
        k,
        (pass) => k.kvWrite(pass, { kv: 'f16', input: IN, k: 0, v: N * width, kc: KC, vc: VC, width, nTok: N, pos: 0 }),
        KC,
        16,
      );
      const keys = f32(ref('deq', [1, N * width], ref('quant', [1, N * width], kin))),
        vals = f32(ref('deq', [1, N * width], ref('quant', [1, N * width], vin)));
      const Qb = bufferOf(device, q);
      for (const window of [0, 300]) {
        const sStride = window || N,
          PART = zeros(device, k.attentionPartials(nTok, nh, hd, sStride) * 4),
          O = zeros(device, nTok * nh * hd * 4);
        const got = f32(
          await runAndRead(
            k,
            (pass) =>
              k.attention(pass, {
                kv: 'f16',
                q: Qb,
                kc: KC,
                vc: VC,
                out: O,
                partials: PART,
                nTok,
                nh,
                hd,
                nKv,
                pos,
                window,
                sStride,
              }),
            O,
          ),
        );
        for (let t = 0; t < nTok; t++)
          for (let h = 0; h < nh; h++) {
            const p = pos + t,
              lo = window ? p - window + 1 : 0,
              g = Math.floor(h / (nh / nKv)),
              qo = (t * nh + h) * hd;
            const sc = [];
            for (let j = lo; j <= p; j++) {
              let d = 0;
              for (let e = 0; e < hd; e++) d += q[qo + e] * keys[j * width + g * hd + e];
              sc.push(d);
            }
            const mx = Math.max(...sc),
              ex = sc.map((v) => Math.exp(v - mx)),
              sum = ex.reduce((a, b) => a + b, 0);
            const want = new Float64Array(hd);
            for (let j = lo; j <= p; j++)
              for (let c = 0; c < hd; c++) want[c] += (ex[j - lo] / sum) * vals[j * width + g * hd + c];
            assertClose(got.subarray(qo, qo + hd), want, 1e-5, `window ${window} token ${t} head ${h}`);
          }
      }
    });

    it('MoE: router top-K (softmax, ties to the lower id, renormalized, expert scale) as forward.c', async () => {
      const r = rng(31),
        nTok = 5,
        nExp = 12,
        topK = 3;
      const z = new Float32Array(nTok * nExp).map(() => r() * 6 - 3);
      z[nExp + 4] = z[nExp + 7] = 9; // token 1: a tie at the top, the lower id first
      const scale = new Float32Array(nExp).map(() => 0.5 + r());
      const Z = bufferOf(device, z),
        SC = bufferOf(device, scale),
        SEL = zeros(device, nTok * topK * 4),
        WT = zeros(device, nTok * topK * 4);
      const sel = new Uint32Array(
        (
          await runAndRead(
            k,
            (pass) => k.moeRoute(pass, { z: Z, expertScale: SC, sel: SEL, weights: WT, nTok, nExp, topK }),
            SEL,
          )
        ).buffer,
      );
      const wt = f32(await runAndRead(k, () => {}, WT));
      for (let t = 0; t < nTok; t++) {
        const prob = f32(ref('softmax', [nExp], z.slice(t * nExp, (t + 1) * nExp)));
        const order = [...prob.keys()].sort((a, b) => prob[b] - prob[a] || a - b).slice(0, topK);
        const sum = order.reduce((s, e) => s + prob[e], 0);
        assert.deepEqual([...sel.subarray(t * topK, (t + 1) * topK)], order, `token ${t} experts`);
        const want = order.map((e) => (prob[e] / sum) * scale[e]);
        assertClose(wt.subarray(t * topK, (t + 1) * topK), want, rel(want, 1e-5), `token ${t} weights`);
      }
      assert.deepEqual([...sel.subarray(topK, topK + 2)], [4, 7]);
    });

    for (const [type, split] of [
      [12, false],
      [8, true],
    ]) {
      it(`MoE: expert matmul ${GPU_TYPES[type].name} on the chosen experts${split ? ', experts split across buffers' : ''}, fused gate|up GELU, combine`, async () => {
        const r = rng(40 + type),
          nExp = 5,
          eRows = 12,
          cols = type === 12 ? 256 : 64,
          nTok = 3,
          topK = 2,
          nSlots = nTok * topK;
        const wb = randomWeights(type, nExp * eRows, cols, r),
          rb = gpuRowBytes(type, cols);
        const w = k.uploadWeight({
          type,
          rows: nExp * eRows,
          cols,
          data: wb,
          unitRows: eRows,
          maxBinding: split ? 2 * eRows * rb + 4 : undefined,
        });
        assert.equal(w.parts.length, split ? 3 : 1);
        const sel = new Uint32Array([3, 0, 4, 1, 1, 3]);
        const x = new Float32Array(nTok * cols).map(() => r() * 2 - 1);
        const X = bufferOf(device, x),
          Q = zeros(device, Math.max(1, k.actWords(type, cols, nTok)) * 4),
          SEL = bufferOf(device, sel);
        const Y = zeros(device, nSlots * eRows * 4);
        const out = f32(
          await runAndRead(
            k,
            (pass) => {
              k.quantize(pass, { type, x: X, act: Q, cols, nTok });
              k.moeMatmul(pass, { w, x: X, act: Q, sel: SEL, y: Y, nSlots, xDiv: topK, expertRows: eRows });
            },
            Y,
          ),
        );
        const actBytes = toGgmlAct(
          GPU_TYPES[type].act,
          await runAndRead(k, () => {}, Q, k.actWords(type, cols, nTok) * 4),
          cols,
          nTok,
        );
        const act = f32(ref('deq', [GPU_TYPES[type].act === 'q8_0' ? 8 : 15, nTok * cols], actBytes));
        const arb = actBytes.length / nTok;
        for (let s = 0; s < nSlots; s++) {
          const t = Math.floor(s / topK),
            e = sel[s];
          const we = wb.subarray(e * eRows * rb, (e + 1) * eRows * rb);
          const want = f32(
            ref('dot', [type, eRows, cols, 1], new Uint8Array([...we, ...actBytes.subarray(t * arb, (t + 1) * arb)])),
          );
          const mag = magnitudes(type, we, eRows, cols, act.subarray(t * cols, (t + 1) * cols), 1);
          assertClose(
            out.subarray(s * eRows, (s + 1) * eRows),
            want,
            Array.from(mag, (m) => m * 1e-5 + 1e-30),
            `slot ${s} (expert ${e})`,
          );
        }
        // [gate | up] halves of each slot's row (6 + 6) -> gelu(gate) * up, rows of 6
        const EACT = zeros(device, nSlots * 6 * 4);
        const gu = f32(
          await runAndRead(
            k,
            (pass) =>
              k.elt(pass, 'geglu2', { a: EACT, b: Y, n: nSlots * 6, cols: 6, aStride: 6, bStride: eRows, cOff: 6 }),
            EACT,
          ),
        );
        for (let s = 0; s < nSlots; s++) {
          const g = out.slice(s * eRows, s * eRows + 6),
            u = out.slice(s * eRows + 6, (s + 1) * eRows);
          const want = f32(ref('geglu', [6], new Float32Array([...g, ...u])));
          assertClose(gu.subarray(s * 6, (s + 1) * 6), want, rel(want, 2e-6, 1e-7), `geglu2 slot ${s}`);
        }
        // combine the slots of each token with weights, in increasing expert id
        const wts = new Float32Array(nSlots).map(() => r());
        const WT = bufferOf(device, wts),
          OUT = zeros(device, nTok * eRows * 4);
        const comb = f32(
          await runAndRead(
            k,
            (pass) => k.moeCombine(pass, { ys: Y, sel: SEL, weights: WT, out: OUT, nTok, topK, n: eRows }),
            OUT,
          ),
        );
        for (let t = 0; t < nTok; t++) {
          const slots = [0, 1].map((q) => t * topK + q).sort((a, b) => sel[a] - sel[b]);
          for (let c = 0; c < eRows; c++) {
            let acc = 0;
            for (const s of slots) acc = Math.fround(acc + Math.fround(wts[s] * out[s * eRows + c]));
            assert.ok(Math.abs(comb[t * eRows + c] - acc) <= Math.abs(acc) * 1e-6 + 1e-7, `combine t ${t} c ${c}`);
          }
        }
        for (const p of w.parts) p.buffer.destroy();
      });
    }

    for (const kv of ['f32', 'f16', 'q8_0']) {
      it(`KV write + attention, ${kv} rows, GQA, full and a sliding ring`, async () => {
        const r = rng(kv === 'f32' ? 21 : 22);
        const nh = 4,
          nKv = 2,
          hd = 32,
          width = nKv * hd;
        for (const { window, cap, ring, steps } of [
          { window: 0, cap: 20, ring: false, steps: 12 },
          { window: 5, cap: 7, ring: true, steps: 12 },
        ]) {
          const rowBytes = { f32: width * 4, f16: width * 2, q8_0: (width / 32) * 34 }[kv];
          const KC = zeros(device, cap * rowBytes),
            VC = zeros(device, cap * rowBytes);
          const keys = [],
            vals = [];
          // prefill 4 tokens, then one token at a time: each call writes its rows, then attends
          let pos = 0;
          for (const n of [4, ...Array(steps - 4).fill(1)]) {
            const kin = new Float32Array(n * width).map(() => r() * 2 - 1),
              vin = new Float32Array(n * width).map(() => r() * 2 - 1);
            const q = new Float32Array(n * nh * hd).map(() => r() * 2 - 1);
            const IN = bufferOf(device, new Float32Array([...kin, ...vin])),
              Qb = bufferOf(device, q);
            const O = zeros(device, n * nh * hd * 4),
              S = zeros(device, n * nh * (pos + n) * 4);
            const got = f32(
              await runAndRead(
                k,
                (pass) => {
                  k.kvWrite(pass, {
                    kv,
                    input: IN,
                    k: 0,
                    v: n * width,
                    kc: KC,
                    vc: VC,
                    width,
                    nTok: n,
                    pos,
                    cap,
                    ring,
                  });
                  k.attention(pass, {
                    kv,
                    q: Qb,
                    kc: KC,
                    vc: VC,
                    out: O,
                    scores: S,
                    nTok: n,
                    nh,
                    hd,
                    nKv,
                    pos,
                    window,
                    cap,
                    ring,
                    sStride: pos + n,
                  });
                },
                O,
              ),
            );
            // the values the C engine's cache holds: f16- or Q8_0-rounded by its quantizer
            const stored = (a) =>
              kv === 'f32'
                ? a
                : f32(ref('deq', [kv === 'f16' ? 1 : 8, a.length], ref('quant', [kv === 'f16' ? 1 : 8, a.length], a)));
            for (let t = 0; t < n; t++) {
              keys.push(stored(kin.slice(t * width, (t + 1) * width)));
              vals.push(stored(vin.slice(t * width, (t + 1) * width)));
            }
            for (let t = 0; t < n; t++) {
              const p = pos + t,
                lo = window > 0 ? Math.max(0, p - window + 1) : 0;
              for (let h = 0; h < nh; h++) {
                const g = Math.floor(h / (nh / nKv)),
                  qo = (t * nh + h) * hd;
                const s = [];
                for (let j = lo; j <= p; j++) {
                  let d = 0;
                  for (let e = 0; e < hd; e++) d += q[qo + e] * keys[j][g * hd + e];
                  s.push(d);
                }
                const mx = Math.max(...s),
                  e = s.map((v) => Math.exp(v - mx)),
                  sum = e.reduce((a, b) => a + b, 0);
                const want = new Float64Array(hd);
                let mag = 0;
                for (let j = lo; j <= p; j++)
                  for (let c = 0; c < hd; c++) {
                    want[c] += (e[j - lo] / sum) * vals[j][g * hd + c];
                    mag = Math.max(mag, Math.abs(vals[j][g * hd + c]));
                  }
                assertClose(got.subarray(qo, qo + hd), want, 1e-5 * mag, `${kv} window ${window} pos ${p} head ${h}`);
              }
            }
            pos += n;
          }
        }
      });
    }
  });
}
