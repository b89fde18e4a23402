// upload.js — one weight matrix uploaded in chunks of rows, as the load reads them (the C load's
// gpu_put: src/model/gpu_attach.h), so that the whole matrix never sits in wasm memory. The
// buffers are laid out as kernels.js uploadWeight lays them out (splitRows: one buffer per part
// at offset 0), so the result is the same weight object.
import { OxError } from '../shared/errors.js';
import { gpuRowBytes, splitRows } from './kernels.js';

export class WeightUpload {
  /**
   * @param {GPUDevice} device
   * @param {{id: number, type: number, rows: number, cols: number}} entry
   * @param {number} maxBinding the device's maxStorageBufferBindingSize
   */
  constructor(device, { id, type, rows, cols }, maxBinding) {
    this.device = device;
    this.id = id;
    this.type = type;
    this.rows = rows;
    this.cols = cols;
    this.rowBytes = gpuRowBytes(type, cols);
    this.next = 0; // the first row not received yet: chunks come in order
    this.parts = splitRows(type, rows, cols, maxBinding).map((s) => ({
      buffer: device.createBuffer({
        size: (s.bytes + 3) & ~3,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
        label: `weight ${id}`,
      }),
      row0: s.row0,
      rows: s.rows,
      filled: 0, // bytes written (a multiple of 4: writeBuffer's unit)
      tail: new Uint8Array(0), // received bytes past `filled`, fewer than 4
    }));
  }

  /** Rows [row0, row0 + rows) in their block layout. */
  put(row0, rows, bytes) {
    const rb = this.rowBytes;
    if (row0 !== this.next || row0 + rows > this.rows || bytes.byteLength < rows * rb)
      throw new OxError(
        'FORMAT',
        `webgpu: weight ${this.id}: rows ${row0}..${row0 + rows} (${bytes.byteLength} bytes) do not follow row ${this.next} of ${this.rows}`,
      );
    for (const p of this.parts) {
      const a = Math.max(row0, p.row0),
        b = Math.min(row0 + rows, p.row0 + p.rows);
      if (a >= b) continue;
      let src = bytes.subarray((a - row0) * rb, (b - row0) * rb);
      if (p.tail.length) {
        const j = new Uint8Array(p.tail.length + src.length);
        j.set(p.tail);
        j.set(src, p.tail.length);
        src = j;
      }
      const last = b === p.row0 + p.rows;
      let n = last ? src.length : src.length & ~3;
      if (last && n % 4) {
        const padded = new Uint8Array((n + 3) & ~3);
        padded.set(src);
        src = padded;
        n = padded.length;
      }
      if (n) this.device.queue.writeBuffer(p.buffer, p.filled, src, 0, n);
      p.filled += n;
      p.tail = last ? new Uint8Array(0) : src.slice(n);
    }
    this.next = row0 + rows;
  }

  get done() {
    return this.next === this.rows;
  }

  /** The weight as kernels.js uploadWeight returns it (once done). */
  weight() {
    const { type, rows, cols, rowBytes } = this;
    return {
      type,
      rows,
      cols,
      rowBytes,
      parts: this.parts.map((p) => ({ buffer: p.buffer, row0: p.row0, rows: p.rows, byteOffset: 0 })),
    };
  }

  /** Bytes of GPU memory its buffers take. */
  get size() {
    return this.parts.reduce((n, p) => n + p.buffer.size, 0);
  }

  destroy() {
    for (const p of this.parts) p.buffer.destroy();
  }
}
