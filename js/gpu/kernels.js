// kernels.js — the WebGPU kernels of the forward pass and how to encode them. The WGSL lives in
// js/gpu/kernels/*.js as template strings (built per weight type / variant, compiled once per
// device and cached here); scalar references: the C engine's (tests/node/gpu-kernels.test.mjs
// compares against src/kernels/*.c through a small native helper).
//
// Use
//   const { device, caps } = await openDevice(gpu, { allowFallback });   // js/gpu/device.js
//   const k = createKernels(device, caps);
//   const w = k.uploadWeight({ type: 12, rows, cols, data });           // GGML bytes, as in the file
//   const enc = device.createCommandEncoder(), pass = enc.beginComputePass();
//   k.rmsnorm(pass, { x: h, y: a, w: normW, n: H, rows: nTok, eps });
//   k.linear(pass, { w, x: a, act, y: q, nTok });                       // quantize + matmul
//   ...                                                                  // every op of the step
//   pass.end(); device.queue.submit([enc.finish()]); k.resetParams();
// Dispatches in one compute pass see each other's writes in order (WebGPU's usage scopes are
// per dispatch), so a whole decode step can be one pass in one command buffer.
//
// Conventions
// - A buffer argument is a GPUBuffer or { buffer, offset } with offset in ELEMENTS (f32 or u32
//   words) from the buffer's start; every buffer is bound whole, so each must be at most
//   caps.maxBinding bytes and have STORAGE usage. Strides are in elements too.
// - Activations are f32 rows, token-major: x[t * cols + c] (or a stride given per op).
// - Weights: { type, rows, cols, rowBytes, parts: [{ buffer, row0, rows, byteOffset }] }, rows
//   in the GGML block layout of `type` (ggml type ids: F32 0, F16 1, Q4_0 2, Q8_0 8, Q4_K 12,
//   Q5_K 13, Q6_K 14, IQ4_NL 20, IQ4_XS 23, BF16 30). A tensor larger than one binding is split
//   by rows: part i holds rows [row0, row0 + rows) at byteOffset in its buffer (uploadWeight
//   puts each part in its own buffer at 0; splitRows says where the cuts go for an engine that
//   uploads itself). matmul dispatches once per part.
// - Quantized weights need their input quantized first (Q8_0 or Q8_K, the C engine's vec-dot
//   formats): `act` is a u32 region of actWords(type, cols, nTok) words; linear() does both.
// - Parameters go through uniform slots written with queue.writeBuffer at encode time; call
//   resetParams() after submitting the command buffer they were encoded into (the slots are
//   then reused; before that, every encode takes a fresh slot).
// - Bad arguments throw OxError (UNSUPPORTED, FORMAT, RANGE, TRUNCATED, CONFIG) before anything
//   is encoded; WebGPU's own validation errors surface through the device's error scopes.
//
// Ops (each `k.op(pass, {...})`; docs in JSDoc below)
//   quantize, matmul, linear     activations -> Q8_0 / Q8_K; y = W x over 1 token (decode) or a
//                                 batch (verify, prefill), weights split across buffers
//   rmsnorm                      with weight, without, per head (rows = tokens x heads)
//   rope                         NEOX rotate-half on the first nPairs pairs (partial rotary),
//                                 cos/sin from ropeTable(positions, hd, nPairs, base, factor)
//   softmax, elt                 rows; geglu / geglu2 / add / axpby / scale / softcap / clamp
//   pool                         the vision tower's k x k average pooling (standardized)
//   kvWrite, attention           f32 / f16 / q8_0 KV rows, GQA, full or sliding ring (p mod cap);
//                                 one workgroup per head, or keys split over many (partials);
//                                 or every query over all `keys` rows of K, V (the vision tower)
//   moeRoute, moeMatmul, moeCombine   router top-K, expert matmuls by selection, weighted sum
// forward.c's step in these terms: rmsnorm -> linear q/k/v -> rmsnorm per head -> rope ->
// rmsnorm (v, no weight) -> kvWrite -> attention -> linear o -> rmsnorm -> elt add; the FFN:
// rmsnorm -> linear gate, up -> elt geglu -> linear down -> rmsnorm -> elt add; PLE: linear,
// elt scale, rmsnorm per layer slice, elt axpby (host row), then per layer linear, elt geglu
// against the layer's slice, linear, rmsnorm, elt add; the layer scale is elt scale; the head
// rmsnorm -> linear -> elt softcap.
import { grid, FLOAT_PARAMS } from './kernels/common.js';
import { TYPES, tokenTile, MATMUL_PARAMS, actLayout, matmulWgsl, matmulRows } from './kernels/matmul.js';
import { QUANTIZE_PARAMS, QUANTIZE_WG, quantizeWgsl } from './kernels/quantize.js';
import {
  ROW_WG,
  RMSNORM_PARAMS,
  rmsnormWgsl,
  ROPE_PARAMS,
  ropeWgsl,
  ropeTable,
  SOFTMAX_PARAMS,
  softmaxWgsl,
  ELT_OPS,
  ELT_PARAMS,
  eltWgsl,
  eltUsesB,
  POOL_PARAMS,
  poolWgsl,
} from './kernels/rows.js';
import {
  ATTN_WG,
  ATTN_CHUNK,
  KV_TYPES,
  KV_WRITE_PARAMS,
  kvWriteWgsl,
  ATTN_PARAMS,
  attentionWgsl,
  attnCombineWgsl,
} from './kernels/attention.js';
import { MOE_WG, ROUTE_PARAMS, routeWgsl, COMBINE_PARAMS, combineWgsl } from './kernels/moe.js';
import { OxError } from '../shared/errors.js';

export { ropeTable, TYPES as GPU_TYPES, actLayout };

const SLOT = 256; // minUniformBufferOffsetAlignment's largest allowed value
const CHUNK = 256 * SLOT;

const needTokens = (n) => {
  if (!(Number.isInteger(n) && n >= 1)) throw new OxError('RANGE', `js/gpu/kernels.js: ${n} tokens (need at least 1)`);
};
const ref = (b) => (b && b.buffer ? { buffer: b.buffer, offset: b.offset ?? 0 } : { buffer: b, offset: 0 });

/** Bytes of one row of `cols` elements of ggml type `type` on the GPU. */
export function gpuRowBytes(type, cols) {
  const T = TYPES[type];
  if (!T) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: weight type ${type} has no GPU kernel`);
  if (T.be === 8) return cols * (T.bb / 8); // F32 / F16 / BF16: any width
  if (cols % T.be)
    throw new OxError('FORMAT', `js/gpu/kernels.js: a ${T.name} row of ${cols} is not a multiple of ${T.be}`);
  return (cols / T.be) * T.bb;
}

/** Where a weight of rows x cols is cut so each part fits a binding of maxBinding bytes, at
 * multiples of unitRows (a stacked expert tensor: one expert's rows).
 * @returns {Array<{row0: number, rows: number, byteOffset: number, bytes: number}>} byteOffset
 *   into the tensor's bytes; each part's size rounded up to 4 for the upload. */
export function splitRows(type, rows, cols, maxBinding, unitRows = 1) {
  const rb = gpuRowBytes(type, cols);
  const per = Math.floor((maxBinding - 4) / (rb * unitRows)) * unitRows;
  if (per < 1)
    throw new OxError(
      'RANGE',
      `js/gpu/kernels.js: ${unitRows} row(s) of ${rb} bytes exceed a binding of ${maxBinding}`,
    );
  const parts = [];
  for (let r = 0; r < rows; r += per) {
    const n = Math.min(per, rows - r);
    parts.push({ row0: r, rows: n, byteOffset: r * rb, bytes: n * rb });
  }
  return parts;
}

/**
 * The kernel set of one device: pipelines compiled on first use.
 * @param {GPUDevice} device
 * @param {import('./device.js').GpuCaps} caps
 */
export function createKernels(device, caps) {
  const pipes = new Map();
  const chunks = [];
  let slot = 0;
  const dummy = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });

  function pipeline(key, code) {
    let p = pipes.get(key);
    if (!p) {
      const module = device.createShaderModule({ code, label: key });
      p = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: key });
      pipes.set(key, p);
    }
    return p;
  }

  // A uniform slot holding `names` from `vals` (u32, or f32 for FLOAT_PARAMS).
  function params(names, vals) {
    const c = Math.floor((slot * SLOT) / CHUNK);
    if (c === chunks.length)
      chunks.push(device.createBuffer({ size: CHUNK, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST }));
    const offset = (slot * SLOT) % CHUNK;
    slot++;
    const words = new Uint32Array(Math.max(4, (names.length + 3) & ~3));
    const f = new Float32Array(words.buffer);
    names.forEach((k, i) => {
      const v = vals[k] ?? 0;
      if (FLOAT_PARAMS.has(k)) f[i] = v;
      else {
        if (!Number.isInteger(v) || v < 0 || v > 0xffffffff)
          throw new OxError('RANGE', `js/gpu/kernels.js: parameter ${k} = ${v} is not a u32`);
        words[i] = v;
      }
    });
    device.queue.writeBuffer(chunks[c], offset, words);
    return { buffer: chunks[c], offset, size: words.byteLength };
  }

  function run(pass, pipe, buffers, uni, groups, gy = 1) {
    const entries = buffers.map((buffer, binding) => ({ binding, resource: { buffer } }));
    entries.push({ binding: buffers.length, resource: uni });
    const bg = device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries });
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bg);
    const [gx, , gz] = grid(groups, device.limits.maxComputeWorkgroupsPerDimension);
    pass.dispatchWorkgroups(gx, gy, gz);
  }

  const k = {
    device,
    caps,

    /** Reuse the uniform slots: call once the command buffer holding the encodes is submitted. */
    resetParams() {
      slot = 0;
    },

    /** u32 words of a quantized activation region for `type` weights (0: float weights read x). */
    actWords(type, cols, nTok) {
      const T = TYPES[type];
      if (!T) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: weight type ${type} has no GPU kernel`);
      return T.act === 'f32' ? 0 : actLayout(T.act, cols, nTok).words;
    },

    /** Upload a weight tensor (GGML bytes) into buffers of at most maxBinding bytes each
     * (stacked experts: unitRows = rows per expert, so no expert straddles two buffers). */
    uploadWeight({ type, rows, cols, data, maxBinding = caps.maxBinding, unitRows = 1, label = '' }) {
      const rowBytes = gpuRowBytes(type, cols);
      if (data.byteLength < rows * rowBytes)
        throw new OxError(
          'TRUNCATED',
          `js/gpu/kernels.js: weight ${label} has ${data.byteLength} bytes, ${rows} rows need ${rows * rowBytes}`,
        );
      const bytes = data instanceof Uint8Array ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      const parts = splitRows(type, rows, cols, maxBinding, unitRows).map((s) => {
        const size = (s.bytes + 3) & ~3;
        const buffer = device.createBuffer({
          size,
          usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
          mappedAtCreation: true,
          label,
        });
        new Uint8Array(buffer.getMappedRange()).set(bytes.subarray(s.byteOffset, s.byteOffset + s.bytes));
        buffer.unmap();
        return { buffer, row0: s.row0, rows: s.rows, byteOffset: 0 };
      });
      return { type, rows, cols, rowBytes, parts };
    },

    /** Quantize nTok rows of cols f32 (x) into act for `type` weights; nothing for float types. */
    quantize(pass, { type, x, act, cols, nTok }) {
      const T = TYPES[type];
      if (!T) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: weight type ${type} has no GPU kernel`);
      needTokens(nTok);
      if (T.act === 'f32') return;
      const be = T.act === 'q8_0' ? 32 : 256;
      if (cols % be) throw new OxError('FORMAT', `js/gpu/kernels.js: ${cols} columns are not a multiple of ${be}`);
      const X = ref(x),
        A = ref(act),
        L = actLayout(T.act, cols, nTok);
      const uni = params(QUANTIZE_PARAMS, { cols, nTok, xOff: X.offset, yOff: A.offset, dOff: L.dOff, sOff: L.sOff });
      run(
        pass,
        pipeline(`quantize-${T.act}`, quantizeWgsl(T.act)),
        [X.buffer, A.buffer],
        uni,
        Math.ceil((nTok * cols) / be / QUANTIZE_WG),
      );
    },

    /** y[t * yStride + row] = W[row] . x[t] for t < nTok; x: the f32 input (float weights) or
     * the quantized region `act` (quantized weights). y: { buffer, offset, stride = w.rows }. */
    matmul(pass, { w, x, act, y, nTok }) {
      const T = TYPES[w.type];
      if (!T) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: weight type ${w.type} has no GPU kernel`);
      needTokens(nTok);
      const X = ref(T.act === 'f32' ? x : act),
        Y = ref(y);
      if (!X.buffer)
        throw new OxError('CONFIG', `js/gpu/kernels.js: a ${T.name} matmul needs ${T.act === 'f32' ? 'x' : 'act'}`);
      const L = actLayout(T.act, w.cols, nTok),
        tt = tokenTile(nTok);
      const pipe = pipeline(`matmul-${w.type}-${tt}`, matmulWgsl(w.type, tt, caps));
      for (const part of w.parts) {
        const uni = params(MATMUL_PARAMS, {
          rows: part.rows,
          cols: w.cols,
          nTok,
          row0: part.row0,
          xOff: X.offset,
          yOff: Y.offset,
          yStride: y.stride ?? w.rows,
          rowBytes: w.rowBytes,
          nb: Math.ceil(w.cols / T.be),
          dOff: L.dOff,
          sOff: L.sOff,
          wOff: part.byteOffset ?? 0,
        });
        run(
          pass,
          pipe,
          [part.buffer, X.buffer, Y.buffer],
          uni,
          Math.ceil(part.rows / matmulRows(caps)),
          Math.ceil(nTok / tt),
        );
      }
    },

    /** quantize (when the type needs it) then matmul. */
    linear(pass, { w, x, act, y, nTok }) {
      k.quantize(pass, { type: w.type, x, act, cols: w.cols, nTok });
      k.matmul(pass, { w, x, act, y, nTok });
    },

    /** RMSNorm of `rows` rows of n: y (default: x, in place) = x * rsqrt(mean(x^2) + eps) (* w).
     * Per-head norms: rows = tokens x heads, n = hd, stride hd. */
    rmsnorm(pass, { x, y, w, n, rows, eps, xStride = n, yStride = n }) {
      const X = ref(x),
        Y = y ? ref(y) : X,
        W = w ? ref(w) : { buffer: dummy, offset: 0 };
      const inPlace = Y.buffer === X.buffer;
      const uni = params(RMSNORM_PARAMS, {
        n,
        rows,
        xOff: X.offset,
        xStride,
        yOff: Y.offset,
        yStride,
        wOff: W.offset,
        hasW: w ? 1 : 0,
        eps,
      });
      run(
        pass,
        pipeline(`rmsnorm-${inPlace}`, rmsnormWgsl(inPlace)),
        inPlace ? [X.buffer, W.buffer] : [X.buffer, W.buffer, Y.buffer],
        uni,
        rows,
      );
    },

    /** RoPE in place on nHeads heads of nTok tokens (head h of token t at x + t * tokStride +
     * h * headStride); cs: ropeTable(positions, hd, nPairs, base, factor) uploaded as f32. */
    rope(pass, { x, cs, hd, nPairs, nHeads, nTok, tokStride, headStride = hd }) {
      const X = ref(x),
        C = ref(cs);
      const n = Math.max(0, Math.min(nPairs, hd >> 1));
      if (!n) return;
      const uni = params(ROPE_PARAMS, {
        hd,
        nPairs: n,
        nHeads,
        nTok,
        xOff: X.offset,
        tokStride,
        headStride,
        csOff: C.offset,
      });
      run(pass, pipeline('rope', ropeWgsl()), [X.buffer, C.buffer], uni, Math.ceil((nTok * nHeads * n) / ROW_WG));
    },

    /** Softmax in place over `rows` rows of n. */
    softmax(pass, { x, n, rows, stride = n }) {
      const X = ref(x);
      const uni = params(SOFTMAX_PARAMS, { n, rows, xOff: X.offset, xStride: stride });
      run(pass, pipeline('softmax', softmaxWgsl()), [X.buffer], uni, rows);
    },

    /** Elementwise op (rows.js ELT_OPS: geglu, geglu2, add, axpby, scale, softcap) over n elements of a
     * (read-write) and b, in rows of `cols` at aStride / bStride (default: contiguous). */
    elt(pass, op, { a, b, n, cols = n, aStride = cols, bStride = cols, s0 = 0, s1 = 0, cOff = 0 }) {
      if (!(op in ELT_OPS)) throw new OxError('CONFIG', `js/gpu/kernels.js: unknown elementwise op ${op}`);
      const A = ref(a),
        useB = eltUsesB(op);
      if (useB && !b) throw new OxError('CONFIG', `js/gpu/kernels.js: elementwise ${op} needs b`);
      const B = useB ? ref(b) : { buffer: null, offset: 0 };
      const uni = params(ELT_PARAMS, { n, cols, aOff: A.offset, aStride, bOff: B.offset, bStride, s0, s1, cOff });
      run(
        pass,
        pipeline(`elt-${op}`, eltWgsl(op)),
        useB ? [A.buffer, B.buffer] : [A.buffer],
        uni,
        Math.ceil(n / ROW_WG),
      );
    },

    /** Store nTok tokens' K and V rows (width = nKv * hd f32 each, token t's at k + t * inStride
     * and v + t * inStride of `input`) in the caches kc / vc (kv: 'f32' | 'f16' | 'q8_0') at rows
     * pos + t (ring: mod cap). k and v are element offsets into `input`. */
    kvWrite(pass, { kv, input, k: kOff, v: vOff, kc, vc, width, nTok, pos, cap = 0, ring = false, inStride = width }) {
      if (!(kv in KV_TYPES)) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: KV type ${kv} has no GPU kernel`);
      if (kv === 'f16' && width % 2)
        throw new OxError('CONFIG', 'js/gpu/kernels.js: an f16 KV row needs an even width');
      if (kv === 'q8_0' && width % 64)
        throw new OxError(
          'CONFIG',
          `js/gpu/kernels.js: a q8_0 KV row of ${width} is not an even number of blocks of 32`,
        );
      const uni = params(KV_WRITE_PARAMS, { width, nTok, pos, cap, ring: ring ? 1 : 0, kOff, vOff, inStride });
      const per = kv === 'f16' ? width / 2 : kv === 'q8_0' ? width / 64 : width;
      run(
        pass,
        pipeline(`kvwrite-${kv}`, kvWriteWgsl(kv)),
        [ref(input).buffer, ref(kc).buffer, ref(vc).buffer],
        uni,
        Math.ceil((nTok * per) / ATTN_WG),
      );
    },

    /** Attention of nTok query tokens (positions pos + t) over the caches: q / out heads at
     * q + t * qStride + h * hd; sStride >= the keys one query sees (min(pos + nTok, window)).
     * Scratch: either `scores`, nTok * nh * sStride f32 (one workgroup per token and head), or
     * `partials`, attentionPartials(nTok, nh, hd, sStride) f32: the keys split in chunks over
     * many workgroups, then merged (long contexts). */
    attention(
      pass,
      {
        kv,
        q,
        kc,
        vc,
        out,
        scores,
        partials,
        nTok,
        nh,
        hd,
        nKv,
        pos,
        window = 0,
        cap = 0,
        ring = false,
        qStride = nh * hd,
        oStride = nh * hd,
        sStride,
        keys = 0,
      },
    ) {
      if (!(kv in KV_TYPES)) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: KV type ${kv} has no GPU kernel`);
      if (nh % nKv)
        throw new OxError('CONFIG', `js/gpu/kernels.js: ${nh} query heads are not a multiple of ${nKv} KV heads`);
      if (kv === 'q8_0' && hd % 32)
        throw new OxError('CONFIG', `js/gpu/kernels.js: a q8_0 KV cache needs heads of a multiple of 32 (not ${hd})`);
      if (!scores === !partials)
        throw new OxError('CONFIG', 'js/gpu/kernels.js: attention takes one scratch: scores or partials');
      needTokens(nTok);
      const Q = ref(q),
        O = ref(out),
        nChunks = Math.ceil(sStride / ATTN_CHUNK);
      const uni = params(ATTN_PARAMS, {
        nTok,
        nh,
        hd,
        nKv,
        pos,
        window,
        cap,
        ring: ring ? 1 : 0,
        qOff: Q.offset,
        qStride,
        oOff: O.offset,
        oStride,
        sStride,
        nChunks,
        keys,
      });
      if (scores) {
        run(
          pass,
          pipeline(`attention-${kv}`, attentionWgsl(kv)),
          [Q.buffer, ref(kc).buffer, ref(vc).buffer, O.buffer, ref(scores).buffer],
          uni,
          nTok * nh,
        );
        return;
      }
      if (ref(partials).offset) throw new OxError('CONFIG', 'js/gpu/kernels.js: attention partials start at offset 0');
      const P = ref(partials).buffer;
      run(
        pass,
        pipeline(`attention-split-${kv}`, attentionWgsl(kv, true)),
        [Q.buffer, ref(kc).buffer, ref(vc).buffer, P],
        uni,
        nTok * nh * nChunks,
      );
      run(pass, pipeline('attention-combine', attnCombineWgsl()), [P, O.buffer], uni, nTok * nh);
    },

    /** The vision tower's k x k average pooling of a ph x pw grid of rows of n, times s0, then
     * standardized by (y - bias) * std when both are given (rows.js poolWgsl). */
    pool(pass, { x, y, n, ph, pw, k: kk, s0, bias, std }) {
      if (!(kk >= 1 && ph % kk === 0 && pw % kk === 0))
        throw new OxError('RANGE', `js/gpu/kernels.js: a ${pw} x ${ph} grid does not pool by ${kk}`);
      const X = ref(x),
        Y = ref(y),
        B = bias ? ref(bias) : { buffer: dummy, offset: 0 },
        S = std ? ref(std) : { buffer: dummy, offset: 0 };
      const uni = params(POOL_PARAMS, {
        n,
        ph,
        pw,
        k: kk,
        xOff: X.offset,
        yOff: Y.offset,
        s0,
        standardize: bias && std ? 1 : 0,
        bOff: B.offset,
        sOff: S.offset,
      });
      const groups = Math.ceil(((ph / kk) * (pw / kk) * n) / ROW_WG);
      run(pass, pipeline('pool', poolWgsl()), [X.buffer, Y.buffer, B.buffer, S.buffer], uni, groups);
    },

    /** f32 of the `partials` scratch of a split attention (from offset 0). */
    attentionPartials(nTok, nh, hd, sStride) {
      return nTok * nh * Math.ceil(sStride / ATTN_CHUNK) * (hd + 2);
    },

    /** Router top-K in place: z (nTok x nExp router logits) becomes the softmax; sel / weights
     * (u32 / f32, nTok x topK) the chosen experts and their weights (times expertScale). */
    moeRoute(pass, { z, expertScale, sel, weights, nTok, nExp, topK }) {
      if (!(topK >= 1 && topK <= nExp))
        throw new OxError('CONFIG', `js/gpu/kernels.js: top ${topK} of ${nExp} experts`);
      const Z = ref(z),
        S = ref(sel),
        W = ref(weights);
      const uni = params(ROUTE_PARAMS, { nTok, nExp, topK, zOff: Z.offset, selOff: S.offset, wOff: W.offset });
      run(
        pass,
        pipeline('moe-route', routeWgsl()),
        [Z.buffer, ref(expertScale).buffer, S.buffer, W.buffer],
        uni,
        Math.ceil(nTok / MOE_WG),
      );
    },

    /** Expert matmuls of nSlots slots (token x chosen expert, sel as moeRoute wrote it; its
     * offset must be 0): y[slot] = W[sel[slot]] . act token slot / xDiv (xDiv = topK for the
     * layer input, 1 for per-slot inputs). w: stacked experts of expertRows rows, uploaded
     * with unitRows = expertRows; x / act as for matmul with nTok = nSlots / xDiv inputs. */
    moeMatmul(pass, { w, x, act, sel, y, nSlots, xDiv, expertRows }) {
      const T = TYPES[w.type];
      if (!T) throw new OxError('UNSUPPORTED', `js/gpu/kernels.js: weight type ${w.type} has no GPU kernel`);
      if (ref(sel).offset) throw new OxError('CONFIG', 'js/gpu/kernels.js: moeMatmul reads sel from offset 0');
      if (!(nSlots % xDiv === 0))
        throw new OxError('CONFIG', `js/gpu/kernels.js: ${nSlots} slots are not a multiple of ${xDiv}`);
      needTokens(nSlots);
      const nIn = nSlots / xDiv,
        X = ref(T.act === 'f32' ? x : act),
        Y = ref(y),
        L = actLayout(T.act, w.cols, nIn);
      const expertBytes = expertRows * w.rowBytes;
      const pipe = pipeline(`moe-matmul-${w.type}`, matmulWgsl(w.type, 1, caps, true));
      for (const part of w.parts) {
        if (part.row0 % expertRows || part.rows % expertRows)
          throw new OxError(
            'CONFIG',
            `js/gpu/kernels.js: expert weight parts must hold whole experts of ${expertRows} rows`,
          );
        const uni = params(MATMUL_PARAMS, {
          rows: expertRows,
          cols: w.cols,
          nTok: nIn,
          row0: 0,
          xOff: X.offset,
          yOff: Y.offset,
          yStride: y.stride ?? expertRows,
          rowBytes: w.rowBytes,
          nb: Math.ceil(w.cols / T.be),
          dOff: L.dOff,
          sOff: L.sOff,
          wOff: part.byteOffset ?? 0,
          xDiv,
          e0: part.row0 / expertRows,
          ne: part.rows / expertRows,
          expertBytes,
        });
        run(
          pass,
          pipe,
          [part.buffer, X.buffer, Y.buffer, ref(sel).buffer],
          uni,
          Math.ceil(expertRows / matmulRows(caps)),
          nSlots,
        );
      }
    },

    /** out[t] = sum of token t's topK expert outputs ys[t * topK + k] (rows of n) times their
     * weights, added in increasing expert id (the C loop's order). */
    moeCombine(pass, { ys, sel, weights, out, nTok, topK, n }) {
      const YS = ref(ys),
        S = ref(sel),
        W = ref(weights),
        O = ref(out);
      const uni = params(COMBINE_PARAMS, {
        nTok,
        topK,
        n,
        ysOff: YS.offset,
        selOff: S.offset,
        wOff: W.offset,
        outOff: O.offset,
      });
      run(
        pass,
        pipeline('moe-combine', combineWgsl()),
        [YS.buffer, S.buffer, W.buffer, O.buffer],
        uni,
        Math.ceil((nTok * n) / MOE_WG),
      );
    },
  };
  return k;
}
