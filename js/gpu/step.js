// step.js — the GPU thread's side of the backend: the model's weights on the device, each
// session's KV caches, and one recorded forward step (js/gpu/list.js) encoded into ONE command
// buffer with the kernels of js/gpu/kernels.js, submitted, and only its READ ops mapped back.
//
// Activations: one storage buffer per region of the C scratch (the list's header says where
// the regions start), so an op's input and output are always distinct bindings, as WebGPU
// requires of a writable binding. KV: per (session, layer) a K and a V buffer of rows stored as
// the session's KV type (f32, f16, q8_0), row p for position p, or on a sliding layer's ring row
// p mod cap as the CPU keeps it; grown by doubling as positions come, up to the session's
// context or the ring (a long context costs GPU memory once used).
import { OxError } from '../shared/errors.js';
import { createKernels, ropeTable, GPU_TYPES } from './kernels.js';
import { kvType } from '../shared/abi.js';
import { walkList } from './list.js';

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

export class StepRunner {
  /** @param {GPUDevice} device @param {import('./device.js').GpuCaps} caps */
  constructor(device, caps) {
    this.device = device;
    this.caps = caps;
    this.k = createKernels(device, caps);
    this.weights = new Map(); // id -> kernels.js weight (matrix) or GPUBuffer (f32 vector)
    this.sessions = new Map(); // session key -> Map(layer -> {kc, vc, width})
    this.regions = []; // index -> {buffer, size}
    this.scratch = new Map(); // name -> {buffer, size}: act (quantized activations), scores, cs, staging
    this.bytes = { weights: 0, kv: 0, scratch: 0 };
    this.lost = null; // why the device was lost, once it was
    device.lost.then((info) => (this.lost = info.message || info.reason || 'lost'));
  }

  /** Weight types with a kernel here (ggml ids). */
  static supports(type) {
    return type in GPU_TYPES;
  }

  /** A weight from the engine's table (id, kind 0 matrix / 1 f32 vector, type, rows, cols) with
   * its bytes as stored. */
  upload({ id, kind, type, rows, cols, unitRows = 1 }, bytes) {
    if (kind === 1) {
      const buffer = this.device.createBuffer({ size: (bytes.byteLength + 3) & ~3, usage: STORAGE() });
      this.device.queue.writeBuffer(buffer, 0, bytes);
      this.weights.set(id, buffer);
      this.bytes.weights += buffer.size;
      return;
    }
    const w = this.k.uploadWeight({ type, rows, cols, data: bytes, unitRows, label: `weight ${id}` });
    w.unitRows = unitRows;
    this.weights.set(id, w);
    for (const p of w.parts) this.bytes.weights += p.buffer.size;
  }

  // a buffer of at least `size` bytes kept under `name`, grown (and replaced) when too small
  grown(name, size, usage = STORAGE()) {
    let s = this.scratch.get(name);
    if (!s || s.size < size) {
      if (s) {
        s.buffer.destroy();
        this.bytes.scratch -= s.size;
      }
      const sz = Math.max(16, (size + 255) & ~255);
      s = { buffer: this.device.createBuffer({ size: sz, usage }), size: sz };
      this.scratch.set(name, s);
      this.bytes.scratch += sz;
    }
    return s.buffer;
  }

  // one buffer per region of the scratch, grown to the sizes this step's layout asks for
  layout(h) {
    const { regions, actBytes } = h;
    for (let i = 0; i < regions.length; i++) {
      const size = (i + 1 < regions.length ? regions[i + 1] : actBytes) - regions[i];
      const r = this.regions[i];
      if (size <= 0 || (r && r.size >= size)) continue;
      if (r) {
        r.buffer.destroy();
        this.bytes.scratch -= r.size;
      }
      this.regions[i] = { buffer: this.device.createBuffer({ size, usage: STORAGE() }), size };
      this.bytes.scratch += size;
    }
    // byte offset -> {buffer, offset (f32 elements), byte}: the last non-empty region starting at or before it
    return (off) => {
      let lo = 0,
        hi = regions.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (regions[mid] <= off) lo = mid;
        else hi = mid - 1;
      }
      while (lo > 0 && !(regions[lo] <= off && (lo + 1 < regions.length ? regions[lo + 1] : actBytes) > regions[lo]))
        lo--;
      return { buffer: this.regions[lo].buffer, offset: (off - regions[lo]) / 4, byte: off - regions[lo] };
    };
  }

  // Layer `layer`'s caches of `session` ({width, type (kernels' name), ring (rows; 0: none)}),
  // holding positions [0, need): grown (doubling, at most maxCtx or ring rows) with the old rows
  // copied by `enc`; the old buffers go once the step ran (dead). A ring never wraps before it
  // has all its rows, so the old rows keep their places.
  kvOf(session, layer, kv, maxCtx, need, enc, dead) {
    let s = this.sessions.get(session);
    if (!s) this.sessions.set(session, (s = new Map()));
    let c = s.get(layer);
    if (!c && !enc) throw new OxError('STATE', `webgpu: layer ${layer} attends before its KV cache was written`);
    const limit = kv?.ring || maxCtx;
    if (enc && c && (c.type !== kv.type || c.ring !== kv.ring || c.width !== kv.width))
      throw new OxError('STATE', `webgpu: layer ${layer}'s KV cache changed its layout within a session`);
    if (enc && (!c || c.rows < Math.min(need, limit))) {
      const rows = Math.min(limit, Math.max(need, 2 * (c?.rows ?? 0), 256)),
        size = rows * kvRowBytes(kv.type, kv.width);
      if (size > this.caps.maxBinding)
        throw new OxError(
          'UNSUPPORTED',
          `webgpu: a KV cache of ${rows} positions x ${kv.width} values exceeds one binding (${this.caps.maxBinding} bytes); use a smaller context`,
        );
      const n = {
        kc: this.device.createBuffer({ size, usage: STORAGE() }),
        vc: this.device.createBuffer({ size, usage: STORAGE() }),
        ...kv,
        rows,
      };
      if (c) {
        enc.copyBufferToBuffer(c.kc, 0, n.kc, 0, c.kc.size);
        enc.copyBufferToBuffer(c.vc, 0, n.vc, 0, c.vc.size);
        dead.push(c.kc, c.vc);
        this.bytes.kv -= c.kc.size + c.vc.size;
      }
      s.set(layer, (c = n));
      this.bytes.kv += 2 * size;
    }
    return c;
  }

  forget(session) {
    const s = this.sessions.get(session);
    if (!s) return;
    for (const c of s.values()) {
      c.kc.destroy();
      c.vc.destroy();
      this.bytes.kv -= c.kc.size + c.vc.size;
    }
    this.sessions.delete(session);
  }

  weight(id) {
    const w = this.weights.get(id);
    if (!w) throw new OxError('STATE', `webgpu: weight ${id} was not uploaded`);
    return w;
  }

  /** Run one step: list (Int32Array) and the UPLOAD ops' bytes in order. Resolves to the READ
   * ops' bytes, concatenated in order. */
  async run(list, uploads) {
    if (this.lost) throw lostError(this.lost);
    const { device, k } = this;
    // first walk: sizes of the per-step scratch (quantized activations, scores, RoPE tables)
    let actWords = 0,
      kvIn = 0,
      scores = 0,
      partials = 0,
      cs = 0,
      readBytes = 0;
    const ops = [];
    const h = walkList(list, (name, a) => {
      ops.push([name, a]);
      if (name === 'MATMUL' || name === 'EXPERTS') {
        const w = this.weights.get(a.w);
        const nIn = name === 'MATMUL' ? a.n : a.nslots / a.xdiv;
        if (w && w.parts) actWords = Math.max(actWords, k.actWords(w.type, w.cols, nIn));
      } else if (name === 'KV_WRITE') kvIn = Math.max(kvIn, 2 * a.ntok * a.width);
      else if (name === 'ATTEND') scores = Math.max(scores, a.ntok * a.nh * (a.pos + a.ntok));
      else if (name === 'ROPE') cs += a.ntok * 2 * Math.max(0, Math.min(a.pairs, a.hd >> 1));
      else if (name === 'ROPE2D') cs += 2 * a.ntok * 2 * (a.hd >> 2);
      else if (name === 'SELF_ATTEND')
        partials = Math.max(partials, k.attentionPartials(selfBlock(k, a), a.nh, a.hd, a.ntok));
      else if (name === 'READ') readBytes += a.bytes;
    });
    const at = this.layout(h);
    const actBuf = actWords ? this.grown('act', actWords * 4) : null;
    const scoreBuf = scores ? this.grown('scores', scores * 4) : null;
    const partBuf = partials ? this.grown('partials', partials * 4) : null;
    const kvInBuf = kvIn ? this.grown('kvin', kvIn * 4) : null;
    const csBuf = cs ? this.grown('cs', cs * 4) : null;
    const csHost = new Float32Array(cs);
    const staging = readBytes
      ? this.grown('staging', readBytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST)
      : null;

    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    const enc = device.createCommandEncoder();
    let pass = null,
      csAt = 0,
      up = 0,
      computed = false;
    const compute = () => (pass ??= enc.beginComputePass());
    const copies = () => {
      pass?.end();
      pass = null;
      return enc;
    };
    const dead = [];
    let readAt = 0;
    try {
      for (const [name, a] of ops) {
        switch (name) {
          case 'UPLOAD': {
            // queue writes land before the submission: only before any compute of this step
            if (computed) throw new OxError('STATE', 'webgpu: an UPLOAD after compute ops in one step');
            const r = at(a.off);
            device.queue.writeBuffer(r.buffer, r.byte, uploads[up++]);
            break;
          }
          case 'MATMUL': {
            const w = this.weight(a.w);
            k.linear(compute(), { w, x: at(a.x), act: actBuf, y: at(a.y), nTok: a.n });
            computed = true;
            break;
          }
          case 'RMS': {
            const x = at(a.x),
              y = at(a.y);
            k.rmsnorm(compute(), {
              x,
              y: y.buffer === x.buffer && y.offset === x.offset ? undefined : y,
              w: a.w >= 0 ? this.weight(a.w) : null,
              n: a.width,
              rows: a.rows,
              eps: a.eps,
            });
            computed = true;
            break;
          }
          case 'ROPE': {
            const n = Math.max(0, Math.min(a.pairs, a.hd >> 1));
            if (!n) break;
            const pos = Array.from({ length: a.ntok }, (_, t) => a.pos + t);
            csHost.set(ropeTable(pos, a.hd, a.pairs, a.base, a.factor), csAt);
            k.rope(compute(), {
              x: at(a.x),
              cs: { buffer: csBuf, offset: csAt },
              hd: a.hd,
              nPairs: a.pairs,
              nHeads: a.nh,
              nTok: a.ntok,
              tokStride: a.nh * a.hd,
            });
            csAt += a.ntok * 2 * n;
            computed = true;
            break;
          }
          case 'ROPE2D': {
            // each head's first half by the column t % pw, its second by the row t / pw
            const hd = a.hd >> 1,
              n = hd >> 1,
              x = at(a.x);
            if (!n) break;
            for (const [half, posOf] of [
              [0, (t) => t % a.pw],
              [hd, (t) => Math.floor(t / a.pw)],
            ]) {
              csHost.set(
                ropeTable(
                  Array.from({ length: a.ntok }, (_, t) => posOf(t)),
                  hd,
                  n,
                  a.base,
                  1,
                ),
                csAt,
              );
              k.rope(compute(), {
                x: { buffer: x.buffer, offset: x.offset + half },
                cs: { buffer: csBuf, offset: csAt },
                hd,
                nPairs: n,
                nHeads: a.nh,
                nTok: a.ntok,
                tokStride: a.nh * a.hd,
                headStride: a.hd,
              });
              csAt += a.ntok * 2 * n;
            }
            computed = true;
            break;
          }
          case 'SELF_ATTEND': {
            // K and V rows in the scratch, read as an f32 cache from row 0 of their regions; the
            // queries in blocks (selfBlock), each over all keys
            const kk = at(a.k),
              vv = at(a.v),
              q = at(a.q),
              out = at(a.out),
              B = selfBlock(k, a),
              w = a.nh * a.hd;
            if (kk.offset || vv.offset)
              throw new OxError('FORMAT', 'webgpu: SELF_ATTEND needs K and V at the start of their regions');
            for (let t0 = 0; t0 < a.ntok; t0 += B)
              k.attention(compute(), {
                kv: 'f32',
                q: { buffer: q.buffer, offset: q.offset + t0 * w },
                kc: kk.buffer,
                vc: vv.buffer,
                out: { buffer: out.buffer, offset: out.offset + t0 * w },
                partials: partBuf,
                nTok: Math.min(B, a.ntok - t0),
                nh: a.nh,
                hd: a.hd,
                nKv: a.nkv,
                pos: 0,
                keys: a.ntok,
                sStride: a.ntok,
              });
            computed = true;
            break;
          }
          case 'POOL':
            k.pool(compute(), {
              x: at(a.x),
              y: at(a.y),
              n: a.width,
              ph: a.ph,
              pw: a.pw,
              k: a.k,
              s0: a.scale,
              bias: a.bias >= 0 ? this.weight(a.bias) : null,
              std: a.std >= 0 ? this.weight(a.std) : null,
            });
            computed = true;
            break;
          case 'CLAMP':
            k.elt(compute(), 'clamp', { a: at(a.y), n: a.count, s0: a.lo, s1: a.hi });
            computed = true;
            break;
          case 'KV_WRITE': {
            const type = KV_NAMES[a.type];
            if (!type) throw new OxError('UNSUPPORTED', `webgpu: KV type ${a.type} has no GPU kernel`);
            const kv = { width: a.width, type, ring: a.ring };
            const c = this.kvOf(h.session, a.layer, kv, h.maxCtx, a.pos + a.ntok, copies(), dead);
            // K and V rows side by side in one input (they live in two regions)
            const kk = at(a.k),
              vv = at(a.v),
              bytes = a.ntok * a.width * 4;
            enc.copyBufferToBuffer(kk.buffer, kk.byte, kvInBuf, 0, bytes);
            enc.copyBufferToBuffer(vv.buffer, vv.byte, kvInBuf, bytes, bytes);
            k.kvWrite(compute(), {
              kv: type,
              input: kvInBuf,
              k: 0,
              v: a.ntok * a.width,
              kc: c.kc,
              vc: c.vc,
              width: a.width,
              nTok: a.ntok,
              pos: a.pos,
              cap: a.ring,
              ring: a.ring > 0,
            });
            computed = true;
            break;
          }
          case 'ATTEND': {
            if (a.bidir) throw new OxError('UNSUPPORTED', 'webgpu: bidirectional attention has no GPU kernel');
            const c = this.kvOf(h.session, a.layer, null, h.maxCtx, 0, null, dead);
            k.attention(compute(), {
              kv: c.type,
              cap: c.ring,
              ring: c.ring > 0,
              q: at(a.q),
              kc: c.kc,
              vc: c.vc,
              out: at(a.out),
              scores: scoreBuf,
              nTok: a.ntok,
              nh: a.nh,
              hd: a.hd,
              nKv: a.nh / a.group,
              pos: a.pos,
              window: a.window,
              sStride: a.pos + a.ntok,
            });
            computed = true;
            break;
          }
          case 'GEGLU': {
            if (a.y !== a.g) {
              // into rows of their own: gate and up in one buffer, up cOff after the gate
              const g = at(a.g),
                u = at(a.u);
              if (u.buffer !== g.buffer || a.ustride !== a.gstride)
                throw new OxError('FORMAT', 'webgpu: GEGLU into other rows needs gate and up rows in one array');
              k.elt(compute(), 'geglu2', {
                a: at(a.y),
                b: g,
                n: a.rows * a.width,
                cols: a.width,
                aStride: a.width,
                bStride: a.gstride,
                cOff: u.offset - g.offset,
              });
              computed = true;
              break;
            }
            k.elt(compute(), 'geglu', {
              a: at(a.g),
              b: at(a.u),
              n: a.rows * a.width,
              cols: a.width,
              aStride: a.gstride,
              bStride: a.ustride,
            });
            computed = true;
            break;
          }
          case 'ADD':
            k.elt(compute(), 'add', { a: at(a.y), b: at(a.x), n: a.count });
            computed = true;
            break;
          case 'SCALE':
            k.elt(compute(), 'scale', { a: at(a.y), n: a.count, s0: a.a });
            computed = true;
            break;
          case 'MIX':
            k.elt(compute(), 'axpby', { a: at(a.y), b: at(a.x), n: a.count, s0: a.b, s1: a.a });
            computed = true;
            break;
          case 'SOFTCAP':
            k.elt(compute(), 'softcap', { a: at(a.y), n: a.count, s0: a.cap });
            computed = true;
            break;
          case 'COPY': {
            const x = at(a.x),
              y = at(a.y);
            copies().copyBufferToBuffer(x.buffer, x.byte, y.buffer, y.byte, a.count * 4);
            computed = true;
            break;
          }
          case 'READ': {
            // the bytes as they are at this point of the step (a layer split reads K, V rows
            // that later layers overwrite in the scratch)
            const r = at(a.off);
            copies().copyBufferToBuffer(r.buffer, r.byte, staging, readAt, a.bytes);
            readAt += a.bytes;
            break;
          }
          case 'ROUTE':
            k.moeRoute(compute(), {
              z: at(a.z),
              expertScale: this.weight(a.w),
              sel: at(a.sel),
              weights: at(a.wts),
              nTok: a.ntok,
              nExp: a.nexp,
              topK: a.topk,
            });
            computed = true;
            break;
          case 'EXPERTS': {
            const w = this.weight(a.w),
              x = at(a.x);
            k.quantize(compute(), { type: w.type, x, act: actBuf, cols: w.cols, nTok: a.nslots / a.xdiv });
            k.moeMatmul(compute(), {
              w,
              x,
              act: actBuf,
              sel: at(a.sel),
              y: at(a.y),
              nSlots: a.nslots,
              xDiv: a.xdiv,
              expertRows: w.unitRows,
            });
            computed = true;
            break;
          }
          case 'COMBINE':
            k.moeCombine(compute(), {
              ys: at(a.ys),
              sel: at(a.sel),
              weights: at(a.wts),
              out: at(a.y),
              nTok: a.ntok,
              topK: a.topk,
              n: a.width,
            });
            computed = true;
            break;
          default:
            throw new OxError('FORMAT', `webgpu: op ${name} has no GPU encoding`);
        }
      }
      copies();
      if (cs) device.queue.writeBuffer(csBuf, 0, csHost);
      device.queue.submit([enc.finish()]);
      for (const b of dead) b.destroy(); // after the submission that copied them
    } finally {
      k.resetParams();
      const [v, m] = [await device.popErrorScope(), await device.popErrorScope()];
      if (this.lost) throw lostError(this.lost);
      if (v || m) throw new OxError('IO', `webgpu: the step failed on the device: ${(v || m).message}`);
    }
    if (!readBytes) {
      await device.queue.onSubmittedWorkDone();
      if (this.lost) throw lostError(this.lost);
      return new Uint8Array(0);
    }
    try {
      await staging.mapAsync(GPUMapMode.READ, 0, readBytes);
    } catch (e) {
      if (this.lost) throw lostError(this.lost);
      throw new OxError('IO', `webgpu: reading the step's results back failed: ${e.message}`);
    }
    const out = new Uint8Array(staging.getMappedRange(0, readBytes).slice(0));
    staging.unmap();
    return out;
  }
}

// SELF_ATTEND's queries per dispatch: as many as keep its partials within SELF_PARTIALS floats
// (an image's patches may reach the thousands: all at once, the partials would outgrow a binding)
const SELF_PARTIALS = 16 << 20;
const selfBlock = (k, a) =>
  Math.max(1, Math.min(a.ntok, Math.floor(SELF_PARTIALS / k.attentionPartials(1, a.nh, a.hd, a.ntok))));

// the kernels' names of the KV types, by ox_kv_type id
const KV_NAMES = Object.fromEntries(Object.entries(kvType).map(([name, id]) => [id, name]));

// bytes of one K (or V) row of `width` values stored as `type`
const kvRowBytes = (type, width) => (type === 'f32' ? 4 * width : type === 'f16' ? 2 * width : (width / 32) * 34);

export function lostError(why) {
  const e = new OxError('IO', `the GPU device was lost (${why}); this request ended, the model continues on the CPU`);
  e.lost = true;
  return e;
}
