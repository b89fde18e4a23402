// lookup_bound.mjs — how far prompt lookup's drafting choices are from the best possible on a
// given text (bench:decoding). Greedy output does not depend on drafting, so for a prompt and
// the tokens generated after it, every schedule of forwards can be costed offline:
//   bestLookup: the cheapest schedule whose drafts are prompt lookup's own candidates
//     (src/decode/draft_lookup.c: the latest 4- to 2-gram match, copied on), any length, drafted
//     or not at each step as if the outcome were known: what a perfect length-and-timing policy
//     would reach with these candidates;
//   allRight: every draft right (any text): the ceiling the verify costs alone allow.
// cost[n] is a forward of n tokens in decode steps (cost[1] = 1), n = 1..cost.length - 1.

/** The latest 4..2-gram match's continuation, k long (periodic where it reaches the end). */
function lookupCandidate(h, k) {
  const n = h.length;
  for (let len = 4; len >= 2; len--) {
    if (len >= n) continue;
    for (let j = n - len - 1; j >= 0; j--) {
      let same = true;
      for (let i = 0; i < len && same; i++) same = h[j + i] === h[n - len + i];
      if (!same) continue;
      const out = [];
      for (let i = 0; i < k; i++) out.push(j + len + i < n ? h[j + len + i] : out[j + len + i - n]);
      return out;
    }
  }
  return [];
}

// min cost to emit out[0..N): position p needs a forward of the pending token (none at p = 0:
// the prompt's logits give the first token) plus any drafts; a draft of k keeps its right
// prefix and the token after it.
function cheapest(out, draftsAt, cost) {
  const N = out.length,
    best = new Array(N + 1).fill(Infinity);
  best[0] = 0;
  for (let p = 0; p < N; p++) {
    const np = p > 0 ? 1 : 0;
    best[p + 1] = Math.min(best[p + 1], best[p] + np);
    const d = draftsAt(p, Math.min(cost.length - 1 - np, N - p - 1));
    for (let k = 1; k <= d.length; k++) {
      let kept = 0;
      while (kept < k && d[kept] === out[p + kept]) kept++;
      const q = p + kept + 1;
      best[q] = Math.min(best[q], best[p] + cost[np + k]);
    }
  }
  return best[N];
}

/** Speed-up over plain decoding (N - 1 forwards) of the best lookup schedule. */
export function bestLookup(prompt, out, cost) {
  return (out.length - 1) / cheapest(out, (p, k) => lookupCandidate([...prompt, ...out.slice(0, p)], k), cost);
}

/** Speed-up if every draft were right. */
export function allRight(out, cost) {
  return (out.length - 1) / cheapest(out, (p, k) => out.slice(p, p + k), cost);
}
