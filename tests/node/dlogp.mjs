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
