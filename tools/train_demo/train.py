"""train.py - train the demo model and write it as a Gemma 4 GGUF with our own writer.

  python3 tools/train_demo/train.py --cli build/oxinfer -o demo.gguf [--steps N] [--seed S]

1. corpus.py writes the training text (simple English chats, generated; see its header);
2. bpe.py learns a 1024-token vocabulary on it;
3. `oxinfer synth --vocab-file` writes a throw-away GGUF with that vocabulary, and
   `oxinfer tokenize` (the engine's own tokenizer) turns the text into ids;
4. model.py trains the model (Adam, fixed seed, numpy float32, on the CPU);
5. the weights go to a directory of raw .f32 files and `oxinfer synth --values --vocab-file`
   writes the final GGUF with the same shapes (src/writers/synth_gguf.c).
Same seed, same numpy: the same file.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import corpus  # noqa: E402
from model import Config, init_params, loss_and_grads  # noqa: E402

CFG = Config()
VOCAB = 1024


def synth_args(c, vocab_file):
    """`oxinfer synth` flags for config c (PLE and KV sharing off, F32 weights)."""
    return ["synth", "--preset", "tiny", "--type", "f32", "--hidden", str(c.hidden), "--layers", str(c.layers),
            "--heads", str(c.heads), "--kv-heads", "1", "--head-dim", str(c.head_dim), "--global-head-dim",
            str(c.global_head_dim), "--ffn", str(c.ffn), "--no-double-wide", "--ple", "0", "--kv-shared", "0",
            "--swa-period", str(c.period), "--window", str(c.window), "--vocab", str(c.vocab), "--user-tokens",
            "0", "--rope-base", str(c.rope_base), "--rope-base-swa", str(c.rope_base_swa), "--partial-rotary",
            str(c.partial), "--softcap", str(c.softcap), "--eps", str(c.eps), "--ctx", "2048", "--vocab-file",
            vocab_file]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit(f"train: {' '.join(cmd[:2])} failed: {r.stderr.strip()}")
    return r.stdout


def token_stream(cli, tmp, docs, vocab_file):
    gguf = os.path.join(tmp, "vocab.gguf")
    run([cli] + synth_args(Config(vocab=VOCAB, hidden=32, layers=2, heads=1, head_dim=32, global_head_dim=32,
                                  ffn=32), vocab_file) + ["-o", gguf])
    text = os.path.join(tmp, "corpus.txt")
    with open(text, "w") as f:
        f.write("".join(docs))
    ids = np.array(json.loads(run([cli, "tokenize", gguf, "--file", text, "--no-bos", "--json"])), dtype=np.int32)
    return ids


def batches(ids, starts, rng, B, T):
    """B windows of T+1 tokens; most begin at a document's <bos> (as every chat does)."""
    s = np.where(rng.random(B) < 0.7, rng.choice(starts, B), rng.integers(0, len(ids) - T - 1, B))
    s = np.minimum(s, len(ids) - T - 1)
    w = np.stack([ids[i:i + T + 1] for i in s])
    return w[:, :-1], w[:, 1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--steps", type=int, default=900)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--seq", type=int, default=192)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--docs", type=int, default=12000)
    a = ap.parse_args()
    t0 = time.time()
    rng = np.random.default_rng(a.seed)
    docs = corpus.corpus(a.docs, a.seed)
    tokens, merges = bpe.train(docs[:3000], VOCAB)
    tmp = tempfile.mkdtemp(prefix="oxinfer-train-")
    try:
        vocab_file = os.path.join(tmp, "vocab.txt")
        bpe.write(vocab_file, tokens, merges)
        ids = token_stream(a.cli, tmp, docs, vocab_file)
        starts = np.flatnonzero(ids == 2)
        print(f"corpus: {len(docs)} chats, {len(ids)} tokens, vocab {len(tokens)} ({len(merges)} merges)", flush=True)
        p = init_params(CFG, rng)
        m = {k: np.zeros_like(v) for k, v in p.items()}
        v2 = {k: np.zeros_like(v) for k, v in p.items()}
        b1, b2, avg = 0.9, 0.98, None
        for step in range(1, a.steps + 1):
            tok, tgt = batches(ids, starts, rng, a.batch, a.seq)
            weight = np.ones(tgt.shape, np.float32)
            loss, G = loss_and_grads(CFG, p, tok, tgt, weight)
            norm = np.sqrt(sum(float((g * g).sum()) for g in G.values()))
            clip = min(1.0, 1.0 / (norm + 1e-6))
            warm = min(1.0, step / 60)
            lr = a.lr * warm * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * step / a.steps)))
            for k in p:
                g = G[k] * clip
                m[k] = b1 * m[k] + (1 - b1) * g
                v2[k] = b2 * v2[k] + (1 - b2) * g * g
                mh, vh = m[k] / (1 - b1 ** step), v2[k] / (1 - b2 ** step)
                p[k] -= (lr * mh / (np.sqrt(vh) + 1e-8)).astype(p[k].dtype)
            avg = loss if avg is None else 0.95 * avg + 0.05 * loss
            if step % 25 == 0 or step == 1:
                print(f"step {step:4d}  loss {avg:.3f}  |g| {norm:.2f}  lr {lr:.2e}  {time.time() - t0:.0f}s", flush=True)
        vals = os.path.join(tmp, "values")
        os.mkdir(vals)
        for k, w in p.items():
            w.astype("<f4").tofile(os.path.join(vals, k + ".f32"))
        out_tmp = a.out + ".tmp"
        run([a.cli] + synth_args(CFG, vocab_file) + ["--values", vals, "-o", out_tmp])
        os.replace(out_tmp, a.out)
        print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB) in {time.time() - t0:.0f}s, final loss {avg:.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
