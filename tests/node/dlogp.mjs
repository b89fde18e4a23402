import { cli } from '../oracle/fixtures.mjs';

// max |difference of log-probabilities| over every row (of `vocab` logits) of two logit arrays
// of equal length: how far two engines' next-token distributions are apart.
export function maxDlogp(a, b, vocab) {
  let w = 0;
  const lse = (x, o) => {
    let m = -Infinity,
      s = 0;
    for (let v = 0; v < vocab; v++) m = Math.max(m, x[o + v]);
    for (let v = 0; v < vocab; v++) s += Math.exp(x[o + v] - m);
    return m + Math.log(s);
  };
  for (let o = 0; o < a.length; o += vocab) {
    const la = lse(a, o),
      lb = lse(b, o);
    for (let v = 0; v < vocab; v++) w = Math.max(w, Math.abs(a[o + v] - la - (b[o + v] - lb)));
  }
  return w;
}

/** log-softmax of one row of logits */
export function logSoftmax(row) {
  let mx = -Infinity;
  for (const x of row) mx = Math.max(mx, x);
  let s = 0;
  for (const x of row) s += Math.exp(x - mx);
  return Array.from(row, (x) => x - mx - Math.log(s));
}

/** the native CLI's log-probs of `tokens` over the model files, as rows [pos][id] */
export function nativeLogprobs(files, tokens) {
  const out = cli(['run', ...files, '--tokens', tokens.join(','), '--all', '--json'], { json: true });
  return out.positions.map((p) => {
    const lp = [];
    for (const [id, v] of p.top) lp[id] = v;
    return lp;
  });
}
