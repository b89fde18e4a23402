// Errors in plain words: what happened and what to do, above the engine's own message (which
// names the file and the problem, and stays shown for the details).

const RULES = [
  [
    /\b(401|403)\b|gated|unauthori[sz]ed|forbidden/i,
    'The server refused the download. Some models on Hugging Face need you to accept their licence while logged in; this page cannot log in for you. Download the file yourself and open it with "Open files…".',
  ],
  [
    /\b404\b|not found/i,
    'The file was not found at that address. Check the URL (on Hugging Face: …/resolve/main/FILE.gguf).',
  ],
  [
    /failed to fetch|networkerror|network error|load failed|ERR_|timed? ?out|ECONN/i,
    'The download did not get through: the network is down, the server is unreachable, or it does not allow this page to read the file (CORS). Try again, or download the file and open it with "Open files…".',
  ],
  [
    /no GGUF or safetensors file|bad magic|not a GGUF/i,
    'That address is not a model file. Give the address of the .gguf file itself (on Hugging Face: …/resolve/main/FILE.gguf, not the repository page), or open safetensors with their config.json and tokenizer files.',
  ],
  [
    /quota|no space|storage/i,
    'The browser has no room left to keep this model. Delete cached models below, or free disk space, then try again.',
  ],
  [
    /out of memory|NOMEM|memory|Array buffer allocation/i,
    "The model does not fit in this tab's memory (a web page can use at most 4 GiB of wasm memory, often less). Pick a smaller model or quantization, e.g. E2B Q4_K_M.",
  ],
  [
    /UNSUPPORTED|unsupported/,
    'This file uses something the engine does not support yet (often a quantization type). Try a Q4_K_M, Q4_0 or Q8_0 file of the model.',
  ],
  [
    /FORMAT|bad magic|malformed|not a GGUF/i,
    'The file is not a valid model file (damaged, incomplete, or not a GGUF/safetensors file). Download it again.',
  ],
  [
    /CONFIG|architecture|gemma4/i,
    'The file is not a Gemma 4 model, or its settings are not the ones this engine runs. Only Gemma 4 text models work here.',
  ],
  [/context|exceed/i, "The conversation is longer than the model's context. Start a new chat."],
];

/** { title, detail } for an error or a message. */
export function explain(e) {
  const detail = e?.message ? String(e.message) : String(e);
  const code = e?.code ? String(e.code) : '';
  for (const [re, title] of RULES) if (re.test(`${code} ${detail}`)) return { title, detail };
  return { title: 'Something went wrong.', detail };
}
