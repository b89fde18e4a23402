// chat.js — messages -> prompt text. The checkpoint's own template (GGUF
// tokenizer.chat_template, chat_template.jinja or tokenizer_config.json) is rendered with
// @huggingface/jinja; without one, the built-in Gemma 4 format (gemma4-spec §e):
//
//   <bos><|turn>system\n{<|think|> when thinking}{system}<turn|>\n
//   <|turn>user\n{text}<turn|>\n
//   <|turn>model\n{answer, thought channel stripped}<turn|>\n
//   ...
//   <|turn>model\n                       (generation prompt)
//
// Roles: system (first message only), user, assistant|model. Content is trimmed; a string or
// an array of {type: 'text', text} parts (text only).

export class ChatError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ChatError';
    this.code = 'RANGE';
  }
}

function textOf(m, i) {
  const c = m.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    return c
      .map((p) => {
        if (typeof p === 'string') return p;
        if (p?.type === 'text' && typeof p.text === 'string') return p.text;
        throw new ChatError(`message ${i}: content part of type ${p?.type} is not supported (text only)`);
      })
      .join('');
  }
  if (c == null) return '';
  throw new ChatError(`message ${i}: content must be a string or an array of text parts`);
}

const stripThought = (s) => s.replace(/<\|channel>[\s\S]*?<channel\|>/g, '');

// The built-in Gemma 4 format.
export function gemma4Prompt(messages, { thinking = false, addGenerationPrompt = true } = {}) {
  let out = '<bos>';
  let rest = messages;
  const sys = messages[0]?.role === 'system' ? textOf(messages[0], 0).trim() : null;
  if (sys !== null) rest = messages.slice(1);
  if (sys !== null || thinking) out += `<|turn>system\n${thinking ? '<|think|>' : ''}${sys ?? ''}<turn|>\n`;
  rest.forEach((m, j) => {
    const i = j + (sys !== null ? 1 : 0);
    let role = m?.role;
    if (role === 'system') throw new ChatError(`message ${i}: a system message must come first`);
    if (role === 'assistant') role = 'model';
    if (role !== 'user' && role !== 'model') throw new ChatError(`message ${i}: unknown role ${JSON.stringify(m?.role)} (system, user, assistant or model)`);
    const text = textOf(m, i);
    out += `<|turn>${role}\n${(role === 'model' ? stripThought(text) : text).trim()}<turn|>\n`;
  });
  if (addGenerationPrompt) out += '<|turn>model\n';
  return out;
}

let jinja = null; // the module, loaded on first use
const compiled = new Map();

// Render `template` (Jinja source, or null for the built-in format).
// opts: thinking, addGenerationPrompt (default true), tools, bosToken ('<bos>'),
// eosToken ('<eos>'), vars (extra template variables).
export async function renderChat(template, messages, opts = {}) {
  if (!Array.isArray(messages) || messages.length === 0) throw new ChatError('messages must be a non-empty array');
  if (!template) return gemma4Prompt(messages, opts);
  jinja ??= await import('@huggingface/jinja');
  let t = compiled.get(template);
  if (!t) {
    try {
      t = new jinja.Template(template);
    } catch (e) {
      throw Object.assign(new Error(`chat template: ${e.message}`), { code: 'FORMAT' });
    }
    compiled.set(template, t);
  }
  const msgs = messages.map((m, i) => ({ ...m, content: textOf(m, i) }));
  try {
    return t.render({
      messages: msgs,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: opts.bosToken ?? '<bos>',
      eos_token: opts.eosToken ?? '<eos>',
      enable_thinking: !!opts.thinking,
      tools: opts.tools,
      ...(opts.vars ?? {}),
    });
  } catch (e) {
    throw Object.assign(new Error(`chat template: ${e.message}`), { code: 'FORMAT' });
  }
}
