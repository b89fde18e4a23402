// session.js — the KV cache of the loaded model. The C session holds the tokens it has run
// (ox_wasm_session_pos / _reuse), so nothing here mirrors them.
import { OxError } from '../shared/errors.js';

export class Session {
  // heap: Heap; engine: the C engine address; vocab: logits per token; maxContext: 0 = the model's;
  // kvType: an id of js/shared/abi.js kvType
  constructor(heap, engine, vocab, maxContext, kvType) {
    this.heap = heap;
    this.vocab = vocab;
    this.ptr = heap.checkPtr(heap.C.ox_wasm_session_new(engine, maxContext, kvType));
  }

  get pos() {
    return this.heap.C.ox_wasm_session_pos(this.ptr);
  }

  truncate(n) {
    this.heap.check(this.heap.C.ox_wasm_session_truncate(this.ptr, n));
  }

  checkTokens(tokens) {
    if (!tokens.length) throw new OxError('RANGE', 'no tokens to run');
    for (const t of tokens)
      if (!Number.isInteger(t) || t < 0 || t >= this.vocab)
        throw new OxError('RANGE', `token id ${t} is out of range (vocab ${this.vocab})`);
  }

  // Logits after the last token (the cached prefix is kept), or after every token (all: the
  // cache is emptied first). -> Float32Array (vocab, or tokens * vocab)
  logits(tokens, all) {
    this.checkTokens(tokens);
    const { heap, vocab } = this;
    const C = heap.C;
    if (all) this.truncate(0);
    return heap.withInts(tokens, (p) => {
      const k = all ? 0 : heap.check(C.ox_wasm_session_reuse(this.ptr, p, tokens.length));
      const n = tokens.length - k,
        rows = all ? n : 1;
      return heap.scoped(rows * vocab * 4, (out) => {
        heap.check(C.ox_wasm_forward(this.ptr, p + 4 * k, n, out, all ? 1 : 0));
        return heap.f32(out, rows * vocab).slice();
      });
    });
  }

  free() {
    this.heap.C.ox_wasm_session_free(this.ptr);
    this.ptr = 0;
  }
}
