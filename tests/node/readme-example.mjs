// The usage example of the README (tests/node/api.test.mjs runs it):
//   node tests/node/readme-example.mjs MODEL.gguf
import { loadModel } from 'oxinfer-web';

const model = await loadModel(process.argv[2], {
  // a path, URL, File/Blob, or several files
  onProgress: ({ fraction }) => process.stderr.write(`\rloading ${(fraction * 100).toFixed(0)}%`),
});
console.error(`\n${model.info.name}: ${model.info.layers} layers, ${model.build} build, ${model.threads} threads`);

const messages = [{ role: 'user', content: 'Write a haiku about the sea.' }];
let reply = '';
for await (const { text, stats } of model.chat(messages, { temperature: 0.7, seed: 1, maxTokens: 32 })) {
  if (stats)
    console.error(
      `\nturn 1: ${stats.generatedTokens} tokens, first after ${stats.firstTokenMs?.toFixed(0)} ms, ${stats.decodeTokPerSec.toFixed(1)} tok/s`,
    );
  else (process.stdout.write(text), (reply += text)); // the answer only: a thought comes in `thought`
}
messages.push({ role: 'assistant', content: reply }, { role: 'user', content: 'Another one.' });
for await (const { text, stats } of model.chat(messages, { maxTokens: 32 })) {
  // only the new turn is prefilled
  if (stats) console.error(`\nturn 2: ${stats.generatedTokens} tokens (${stats.reusedTokens} prompt tokens reused)`);
  else process.stdout.write(text);
}
await model.unload();
