"""bpe.py - a small Gemma-4-style BPE vocabulary trained on the corpus.

Layout (ids): the specials first, with the ids our GGUF writer gives them (<pad> 0, <eos> 1,
<bos> 2, <unk> 3, <mask> 4) and the Gemma 4 control tokens (<|turn>, <turn|>, <|channel>,
<channel|>, <|think|>); the 256 byte tokens <0x00>..<0xFF> (byte fallback: any text encodes);
"\n", "\t", the space mark U+2581 and printable ASCII as single characters; then one token
per merge, learned by frequency. Spaces are U+2581 as in Gemma's vocabulary; a word is
"▁word", so merges never cross a word boundary (our tokenizer then splits the text exactly as
the training units below).
"""
import collections
import re

SPACE = "\u2581"
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>", "<|channel>", "<channel|>",
            "<|think|>"]
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6
UNIT = re.compile(SPACE + r"?[A-Za-z]+(?:'[a-z]+)?|" + SPACE + r"?[0-9]|" + SPACE + r"?[^\n" + SPACE +
                  r"A-Za-z0-9]|" + SPACE + r"+|\n+")
SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIALS) + ")")


def units(text):
    for part in SPLIT.split(text):
        if part and part not in SPECIALS:
            yield from UNIT.findall(part.replace(" ", SPACE))


def train(docs, vocab_size):
    """-> (tokens [(piece, type)], merges [(a, b)])."""
    tokens = [(s, UNKNOWN if s == "<unk>" else CONTROL) for s in SPECIALS]
    tokens += [(f"<0x{b:02X}>", BYTE) for b in range(256)]
    chars = ["\n", "\t", SPACE] + [chr(c) for c in range(33, 127)]
    tokens += [(c, NORMAL) for c in chars]
    have = set(p for p, _ in tokens)
    counts = collections.Counter(u for d in docs for u in units(d))
    words = [[list(w), n] for w, n in counts.items()]
    merges = []
    while len(tokens) < vocab_size:
        pairs = collections.Counter()
        for syms, n in words:
            for a, b in zip(syms, syms[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        # most frequent; ties by the pair itself, so the result does not depend on dict order
        (a, b), n = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < 2:
            break
        merges.append((a, b))
        if a + b not in have:
            tokens.append((a + b, NORMAL))
            have.add(a + b)
        for w in words:
            s, out, i = w[0], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            w[0] = out
    while len(tokens) < vocab_size:  # a corpus too small to fill the vocab: unused ids stay unused
        tokens.append((f"<unused{len(tokens)}>", 5))
    return tokens, merges


def write(path, tokens, merges):
    """The vocab file `oxinfer synth --vocab-file` reads (src/writers/synth_vocab.c, read_vocab)."""
    hx = lambda s: s.encode("utf-8").hex()
    with open(path, "w") as f:
        for p, t in tokens:
            f.write(f"t {t} {hx(p)}\n")
        for a, b in merges:
            f.write(f"m {hx(a)} {hx(b)}\n")
