// Compiled by `npm run typecheck` (tsc --noEmit: tsconfig.json with the DOM lib, and
// tsconfig.node.json with es2022 and @types/node only): the declarations of the public API hold
// together and accept what a user writes with them, in a page and in Node.
import { loadModel, OxError, type GenerateOptions, type LoadOptions } from '../../js/main/index.js';

const load: LoadOptions = { quant: 'q4', kvType: 'q8_0', streamWeights: 'experts', memoryBudget: 'auto' };
const gen: GenerateOptions = {
  temperature: 0,
  topK: 1,
  speculative: { method: 'prompt-lookup', draftTokens: 4 },
  logprobs: 2,
};

export async function run(): Promise<string> {
  const model = await loadModel('model.gguf', load);
  let text = '';
  for await (const chunk of model.generate('Hello', gen)) if ('text' in chunk) text += chunk.text;
  // images: content parts (a Blob, a data: URL, an OpenAI image_url) and the rows of one image
  const png = new Blob([new Uint8Array(8)], { type: 'image/png' });
  const parts = [
    { type: 'image' as const, image: png },
    { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,' } },
    { type: 'text' as const, text: 'What is it?' },
  ];
  for await (const chunk of model.chat([{ role: 'user', content: parts }], { maxImageTokens: 70 }))
    if ('text' in chunk) text += chunk.text;
  if (model.info.vision) text += String((await model.embedImage(png)).softTokens + model.info.vision.imageTokenId);
  const [vec] = await model.embed('Hello', { pooling: 'cls' });
  if (!(vec instanceof Float32Array)) throw new OxError('STATE', 'not a vector');
  await model.unload();
  return text;
}
