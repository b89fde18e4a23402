// png_pattern.mjs — test images: a w x h PNG of a smooth pattern (seed changes it).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { PNG } = require('pngjs');

export function pngOf(w, h, seed) {
  const p = new PNG({ width: w, height: h });
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      p.data[i] = (x * 255) / w;
      p.data[i + 1] = (y * 255) / h;
      p.data[i + 2] = (128 + 127 * Math.sin((x + y) / (3 + seed))) | 0;
      p.data[i + 3] = 255;
    }
  return new Uint8Array(PNG.sync.write(p));
}
