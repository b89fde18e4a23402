// tokens.js — token-list rules both sides of the worker boundary apply.

/** ids with the BOS token in front, unless it is there already (a prompt's first token). */
export const withBos = (ids, bos) => (ids[0] === bos ? ids : [bos, ...ids]);
