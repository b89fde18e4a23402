// errors.js — the package's one error class. Codes are the names of the C side's OX_E_*
// values (js/shared/abi.js, from src/base/err.h); the engine worker sends {code, message} and the
// main thread rebuilds an OxError from it, so an error looks the same wherever it arose.
import { codes } from './abi.js';

export class OxError extends Error {
  /** @param {string} code one of `codes` (not OK)  @param {string} message names the file and the problem */
  constructor(code, message) {
    super(message);
    this.name = code === 'ABORTED' ? 'AbortError' : 'OxError';
    this.code = code in codes && code !== 'OK' ? code : 'STATE';
  }
}

export const abortError = (what) => new OxError('ABORTED', `${what} aborted`);

// An OxError for anything thrown: errors that carry a code (a {code, message} from the worker)
// keep it; anything else is STATE.
export function toOxError(e) {
  if (e instanceof OxError) return e;
  return new OxError(typeof e?.code === 'string' ? e.code : 'STATE', e?.message ?? String(e));
}
