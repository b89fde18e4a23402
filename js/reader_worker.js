// reader_worker.js — Node helper thread of the host-file table (js/hostfile.js, NodeBridge):
// runs the async reads (HTTP Range fetch, Blob slices) that Node offers no sync form of, and
// hands the bytes back through shared memory while the engine thread waits in Atomics.wait.
// Control words: ctrl[0] state (1 = answered), ctrl[1] status (0 or an err.h code),
// ctrl[2] byte count (of the data, or of a UTF-8 error message).
import { parentPort, workerData } from 'node:worker_threads';
import { fetchRange, ERROR_CODES, HostError } from './hostfile.js';

const { ctrl, data, timeoutMs } = workerData;
const blobs = new Map();

function answer(status, bytes) {
  data.set(bytes.subarray(0, data.length));
  Atomics.store(ctrl, 1, status);
  Atomics.store(ctrl, 2, Math.min(bytes.length, data.length));
  Atomics.store(ctrl, 0, 1);
  Atomics.notify(ctrl, 0);
}

async function read(m) {
  if (m.kind === 'url') return fetchRange(m.name, m.url, m.off, m.len, m.want, timeoutMs);
  const blob = blobs.get(m.id);
  if (!blob) throw new HostError('IO', `${m.name}: blob not registered with the reader thread`);
  const bytes = new Uint8Array(await blob.slice(m.off, m.off + m.len).arrayBuffer());
  if (bytes.length !== m.len) throw new HostError('IO', `${m.name}: short read: got ${bytes.length} of ${m.len} bytes at offset ${m.off}`);
  return bytes;
}

parentPort.on('message', async (m) => {
  if (m.op === 'blob') return void blobs.set(m.id, m.blob);
  if (m.op === 'drop') return void blobs.delete(m.id);
  try {
    answer(0, await read(m));
  } catch (e) {
    const msg = e instanceof HostError ? e.message : `${m.name}: read failed: ${e.message}`;
    answer(ERROR_CODES[e.code] ?? ERROR_CODES.IO, new TextEncoder().encode(msg));
  }
});
parentPort.postMessage('ready');
