// image_size.js — the size an image is resized to before the vision tower, and its number of
// soft tokens: the Gemma 4 image processor's arithmetic (docs/images.md).
//
// An image of h x w pixels goes to the largest h' x w' that keeps its aspect ratio, has both
// sides multiples of patchSize * poolingKernel (the tower's pooling groups k x k patches), and
// holds at most maxSoftTokens * k^2 patches:
//   f = sqrt(maxSoftTokens * k^2 * p^2 / (h * w)), h' = floor(f h / (k p)) * k p, likewise w';
// a side that rounds to 0 becomes k p and the other floor(long / short) * k p, at most
// maxSoftTokens * k p. The soft tokens: (h' / p) * (w' / p) / k^2. The arithmetic is in
// doubles, as the processor's Python floats, so the sizes match it exactly.
import { OxError } from '../shared/errors.js';

/** The soft-token budgets the processor accepts per image (max_soft_tokens). */
export const SOFT_TOKEN_BUDGETS = Object.freeze([70, 140, 280, 560, 1120]);

/**
 * @param {number} height  @param {number} width  the decoded image's pixels
 * @param {{patchSize: number, poolingKernel: number, maxSoftTokens: number}} v
 * @returns {{height: number, width: number, softTokens: number}} the resized size and its soft tokens
 */
export function imageSize(height, width, { patchSize, poolingKernel, maxSoftTokens }) {
  if (!(Number.isInteger(height) && Number.isInteger(width) && height > 0 && width > 0))
    throw new OxError('RANGE', `image: ${width}x${height} pixels (an image needs at least one pixel)`);
  if (!SOFT_TOKEN_BUDGETS.includes(maxSoftTokens))
    throw new OxError(
      'RANGE',
      `maxImageTokens must be one of ${SOFT_TOKEN_BUDGETS.join(', ')}, not ${JSON.stringify(maxSoftTokens)}`,
    );
  const k2 = poolingKernel * poolingKernel;
  const maxPatches = maxSoftTokens * k2;
  const targetPx = maxPatches * patchSize * patchSize;
  const factor = Math.sqrt(targetPx / (height * width));
  const side = poolingKernel * patchSize;
  let h = Math.floor((factor * height) / side) * side;
  let w = Math.floor((factor * width) / side) * side;
  const maxSide = Math.floor(maxPatches / k2) * side;
  // (both sides cannot round to 0: their product is maxPatches * p^2 >= k^2 p^2 before rounding)
  if (h === 0) [h, w] = [side, Math.min(Math.floor(width / height) * side, maxSide)];
  else if (w === 0) [h, w] = [Math.min(Math.floor(height / width) * side, maxSide), side];
  return { height: h, width: w, softTokens: ((h / patchSize) * (w / patchSize)) / k2 };
}
