"""model.py - a tiny Gemma 4 text decoder in numpy, forward and backward written by hand.

The math is the engine's (src/model/model.c, docs/architecture.md; Gemma 4 spec section b):
  x = E[tok] * sqrt(H)
  per layer:  a = rms(x) * attn_norm
              q = rms_head(a Wq) * q_norm, RoPE;  k = rms_head(a Wk) * k_norm, RoPE;  v = rms_head(a Wv)
              attention with scale 1 (the q/k norms set the temperature), causal, and on sliding
              layers only the `window` newest keys; one KV head shared by all query heads
              x += rms(att Wo) * post_attention_norm
              x += rms(Wd (gelu_tanh(Wg a2) * Wu a2)) * post_ffw_norm,  a2 = rms(x) * ffn_norm
              x *= layer_output_scale
  logits = cap * tanh((rms(x) * output_norm) E^T / cap)        (tied head, soft-cap)
RoPE rotates pairs (i, i + hd/2) by pos * base^(-2i/hd); full layers (head dim ghd, base 1e6)
rotate only their first partial * ghd/2 pairs ("proportional" RoPE), sliding layers all pairs.
Layer l is full attention when l % period == period - 1. No PLE, no KV sharing (both 0 in the
file). Parameters are named by their GGUF tensor names; matrices are [out][in] as GGUF rows.
"""
import numpy as np

GELU_K = np.sqrt(2.0 / np.pi)


class Config:
    def __init__(self, vocab=1024, hidden=128, layers=4, heads=4, head_dim=32, global_head_dim=64, ffn=512,
                 window=32, period=2, rope_base=1e6, rope_base_swa=1e4, partial=0.25, softcap=30.0, eps=1e-6):
        self.__dict__.update(locals())
        del self.__dict__["self"]

    def full(self, l):
        return l % self.period == self.period - 1

    def hd(self, l):
        return self.global_head_dim if self.full(l) else self.head_dim


def init_params(c, rng, dtype=np.float32):
    p = {}
    n = lambda *shape: rng.standard_normal(shape)
    p["token_embd.weight"] = n(c.vocab, c.hidden) / np.sqrt(c.hidden)
    p["output_norm.weight"] = np.ones(c.hidden)
    for l in range(c.layers):
        hd, H, I = c.hd(l), c.hidden, c.ffn
        b = f"blk.{l}."
        p[b + "attn_norm.weight"] = np.ones(H)
        p[b + "attn_q.weight"] = n(c.heads * hd, H) / np.sqrt(H)
        p[b + "attn_k.weight"] = n(hd, H) / np.sqrt(H)
        p[b + "attn_v.weight"] = n(hd, H) / np.sqrt(H)
        p[b + "attn_q_norm.weight"] = np.ones(hd)
        p[b + "attn_k_norm.weight"] = np.ones(hd)
        p[b + "attn_output.weight"] = n(H, c.heads * hd) / np.sqrt(c.heads * hd)
        p[b + "post_attention_norm.weight"] = np.full(H, 0.5)
        p[b + "ffn_norm.weight"] = np.ones(H)
        p[b + "ffn_gate.weight"] = n(I, H) / np.sqrt(H)
        p[b + "ffn_up.weight"] = n(I, H) / np.sqrt(H)
        p[b + "ffn_down.weight"] = n(H, I) / np.sqrt(I)
        p[b + "post_ffw_norm.weight"] = np.full(H, 0.5)
        p[b + "layer_output_scale.weight"] = np.ones(1)
    return {k: v.astype(dtype) for k, v in p.items()}


# ---------------------------------------------------------------- pieces (forward, backward)

def rms_fwd(x, w, eps):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    xh = x * r
    return (xh * w if w is not None else xh), (xh, r)


def rms_bwd(dy, w, cache):
    xh, r = cache
    g = dy * w if w is not None else dy
    dx = r * (g - xh * np.mean(g * xh, axis=-1, keepdims=True))
    dw = None if w is None else (dy * xh).reshape(-1, xh.shape[-1]).sum(0)
    return dx, dw


def rope_tables(c, l, T):
    hd = c.hd(l)
    pairs = int(np.floor(c.partial * hd / 2)) if c.full(l) else hd // 2
    base = c.rope_base if c.full(l) else c.rope_base_swa
    i = np.arange(pairs)
    th = np.arange(T)[:, None] * base ** (-2.0 * i / hd)[None, :]
    return np.cos(th), np.sin(th), pairs


def rope(x, tab, sign=1.0):
    """x [..., T, n_heads, hd]; rotates pairs (i, i + hd/2) for i < pairs; sign -1 = inverse."""
    cos, sin, pairs = tab
    hd = x.shape[-1]
    half = hd // 2
    y = x.copy()
    c_ = cos[:, None, :].astype(x.dtype)
    s_ = sign * sin[:, None, :].astype(x.dtype)
    x0, x1 = x[..., :pairs], x[..., half:half + pairs]
    y[..., :pairs] = x0 * c_ - x1 * s_
    y[..., half:half + pairs] = x0 * s_ + x1 * c_
    return y


def gelu_fwd(g):
    t = np.tanh(GELU_K * (g + 0.044715 * g ** 3))
    return 0.5 * g * (1 + t), t


def gelu_bwd(g, t):
    return 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * GELU_K * (1 + 3 * 0.044715 * g * g)


def mask(c, l, T):
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    ok = j <= i
    if not c.full(l):
        ok &= j > i - c.window
    return ok


# ---------------------------------------------------------------- the model

def forward(c, p, tok, want_cache=True):
    """tok [B, T] -> logits [B, T, V] (and the cache for backward)."""
    B, T = tok.shape
    H, nh, eps = c.hidden, c.heads, c.eps
    E = p["token_embd.weight"]
    x = E[tok] * np.float32(np.sqrt(H)).astype(E.dtype)
    caches = []
    for l in range(c.layers):
        b, hd = f"blk.{l}.", c.hd(l)
        tab = rope_tables(c, l, T)
        C = {"x_in": x}
        a, C["an"] = rms_fwd(x, p[b + "attn_norm.weight"], eps)
        q = (a @ p[b + "attn_q.weight"].T).reshape(B, T, nh, hd)
        k = (a @ p[b + "attn_k.weight"].T).reshape(B, T, 1, hd)
        v = (a @ p[b + "attn_v.weight"].T).reshape(B, T, 1, hd)
        qn, C["qn"] = rms_fwd(q, p[b + "attn_q_norm.weight"], eps)
        kn, C["kn"] = rms_fwd(k, p[b + "attn_k_norm.weight"], eps)
        vn, C["vnc"] = rms_fwd(v, None, eps)
        qr, kr = rope(qn, tab), rope(kn, tab)
        s = qr.transpose(0, 2, 1, 3) @ kr.transpose(0, 2, 3, 1)  # [B, h, t, s]
        s = np.where(mask(c, l, T), s, -np.inf)
        s = s - s.max(-1, keepdims=True)
        pr = np.exp(s)
        pr /= pr.sum(-1, keepdims=True)
        att = (pr @ vn.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3).reshape(B, T, nh * hd)
        o = att @ p[b + "attn_output.weight"].T
        on, C["pan"] = rms_fwd(o, p[b + "post_attention_norm.weight"], eps)
        x = x + on
        a2, C["fn"] = rms_fwd(x, p[b + "ffn_norm.weight"], eps)
        g = a2 @ p[b + "ffn_gate.weight"].T
        u = a2 @ p[b + "ffn_up.weight"].T
        gg, t = gelu_fwd(g)
        h = gg * u
        f = h @ p[b + "ffn_down.weight"].T
        fo, C["pfn"] = rms_fwd(f, p[b + "post_ffw_norm.weight"], eps)
        x_pre = x + fo
        x = x_pre * p[b + "layer_output_scale.weight"][0]
        if want_cache:
            C.update(a=a, qr=qr, kr=kr, vn=vn, pr=pr, att=att, a2=a2, g=g, t=t, u=u, gg=gg, h=h, x_pre=x_pre,
                     tab=tab)
            caches.append(C)
    hn, on_c = rms_fwd(x, p["output_norm.weight"], eps)
    z = hn @ E.T
    th = np.tanh(z / c.softcap)
    logits = c.softcap * th
    return logits, (tok, caches, hn, on_c, th)


def loss_and_grads(c, p, tok, tgt, weight):
    """Mean cross-entropy of tgt under the logits of tok (weighted per position), and its gradient."""
    logits, (tok, caches, hn, on_c, th) = forward(c, p, tok)
    B, T, V = logits.shape
    H, nh = c.hidden, c.heads
    m = logits.max(-1, keepdims=True)
    e = np.exp(logits - m)
    Z = e.sum(-1, keepdims=True)
    logp_t = np.take_along_axis(logits - m - np.log(Z), tgt[..., None], -1)[..., 0]
    wsum = weight.sum()
    loss = -(logp_t * weight).sum() / wsum
    dlog = e / Z
    np.put_along_axis(dlog, tgt[..., None], np.take_along_axis(dlog, tgt[..., None], -1) - 1, -1)
    dlog *= (weight / wsum)[..., None].astype(dlog.dtype)
    dz = dlog * (1 - th * th)
    G = {k: np.zeros_like(v) for k, v in p.items()}
    E = p["token_embd.weight"]
    G["token_embd.weight"] += dz.reshape(-1, V).T @ hn.reshape(-1, H)
    dhn = dz @ E
    dx, G["output_norm.weight"] = rms_bwd(dhn, p["output_norm.weight"], on_c)
    for l in reversed(range(c.layers)):
        C, b, hd = caches[l], f"blk.{l}.", c.hd(l)
        sc = p[b + "layer_output_scale.weight"][0]
        G[b + "layer_output_scale.weight"][0] = (dx * C["x_pre"]).sum()
        dx = dx * sc
        # feed-forward branch
        dfo = dx
        df, G[b + "post_ffw_norm.weight"] = rms_bwd(dfo, p[b + "post_ffw_norm.weight"], C["pfn"])
        G[b + "ffn_down.weight"] = df.reshape(-1, H).T @ C["h"].reshape(-1, c.ffn)
        dh = df @ p[b + "ffn_down.weight"]
        dg = dh * C["u"] * gelu_bwd(C["g"], C["t"])
        du = dh * C["gg"]
        a2 = C["a2"].reshape(-1, H)
        G[b + "ffn_gate.weight"] = dg.reshape(-1, c.ffn).T @ a2
        G[b + "ffn_up.weight"] = du.reshape(-1, c.ffn).T @ a2
        da2 = dg @ p[b + "ffn_gate.weight"] + du @ p[b + "ffn_up.weight"]
        dxf, G[b + "ffn_norm.weight"] = rms_bwd(da2, p[b + "ffn_norm.weight"], C["fn"])
        dx = dx + dxf
        # attention branch
        do, G[b + "post_attention_norm.weight"] = rms_bwd(dx, p[b + "post_attention_norm.weight"], C["pan"])
        G[b + "attn_output.weight"] = do.reshape(-1, H).T @ C["att"].reshape(-1, nh * hd)
        datt = (do @ p[b + "attn_output.weight"]).reshape(B, T, nh, hd)
        pr, vh, qh, kh = C["pr"], C["vn"].transpose(0, 2, 1, 3), C["qr"].transpose(0, 2, 1, 3), C["kr"].transpose(0, 2, 1, 3)
        dah = datt.transpose(0, 2, 1, 3)  # heads first: [B, h, T, hd]
        dpr = dah @ vh.transpose(0, 1, 3, 2)
        dvn = (pr.transpose(0, 1, 3, 2) @ dah).sum(1)  # [B, T, hd]
        ds = pr * (dpr - (dpr * pr).sum(-1, keepdims=True))
        dqr = (ds @ kh).transpose(0, 2, 1, 3)
        dkr = (ds.transpose(0, 1, 3, 2) @ qh).sum(1)
        dqn = rope(dqr, C["tab"], -1.0)
        dkn = rope(dkr[:, :, None], C["tab"], -1.0)
        dq, G[b + "attn_q_norm.weight"] = rms_bwd(dqn, p[b + "attn_q_norm.weight"], C["qn"])
        dk, G[b + "attn_k_norm.weight"] = rms_bwd(dkn, p[b + "attn_k_norm.weight"], C["kn"])
        dv, _ = rms_bwd(dvn[:, :, None], None, C["vnc"])
        a = C["a"].reshape(-1, H)
        dq, dk, dv = dq.reshape(-1, nh * hd), dk.reshape(-1, hd), dv.reshape(-1, hd)
        G[b + "attn_q.weight"] = dq.T @ a
        G[b + "attn_k.weight"] = dk.T @ a
        G[b + "attn_v.weight"] = dv.T @ a
        da = (dq @ p[b + "attn_q.weight"] + dk @ p[b + "attn_k.weight"] + dv @ p[b + "attn_v.weight"]).reshape(B, T, H)
        dxa, G[b + "attn_norm.weight"] = rms_bwd(da, p[b + "attn_norm.weight"], C["an"])
        dx = dx + dxa
    dx = dx * np.sqrt(H)
    np.add.at(G["token_embd.weight"], tok.reshape(-1), dx.reshape(-1, H))
    return loss, G


def grad_check(seed=0):
    """Central differences against the analytic gradient on a tiny float64 model; max rel error."""
    rng = np.random.default_rng(seed)
    c = Config(vocab=40, hidden=16, layers=2, heads=2, head_dim=8, global_head_dim=16, ffn=24, window=3)
    p = init_params(c, rng, np.float64)
    for k in p:
        if k.endswith("norm.weight") or k.endswith("scale.weight"):
            p[k] = p[k] + 0.1 * rng.standard_normal(p[k].shape)
    tok = rng.integers(0, c.vocab, (2, 7))
    tgt = rng.integers(0, c.vocab, (2, 7))
    w = rng.random((2, 7))
    _, G = loss_and_grads(c, p, tok, tgt, w)
    worst = 0.0
    for k in p:
        flat = p[k].reshape(-1)
        for i in rng.choice(flat.size, min(4, flat.size), replace=False):
            old = flat[i]
            flat[i] = old + 1e-5
            lp, _ = loss_and_grads(c, p, tok, tgt, w)
            flat[i] = old - 1e-5
            lm, _ = loss_and_grads(c, p, tok, tgt, w)
            flat[i] = old
            num, ana = (lp - lm) / 2e-5, G[k].reshape(-1)[i]
            worst = max(worst, abs(num - ana) / max(1e-6, abs(num) + abs(ana)))
    return worst


if __name__ == "__main__":
    print("max relative gradient error:", grad_check())
