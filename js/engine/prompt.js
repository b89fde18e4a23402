// prompt.js — what a generate or chat request runs: its prompt tokens and options. Text is
// tokenized here and a chat is rendered here (js/engine/chat.js), next to the tokenizer, so a call
// is one round trip from the main thread.
import { renderChat } from './chat.js';
import { OxError } from '../shared/errors.js';
import { withBos } from '../shared/tokens.js';
import { withImages } from './vision.js';

// -> the prompt text of a chat request {messages, chat: {template, thinking, ...}}
export function chatText(engine, m) {
  const c = m.chat ?? {};
  return renderChat(c.template !== undefined ? c.template : engine.template, m.messages, c);
}

// {text} (BOS added unless it starts with it), {tokens}, or {messages} -> {tokens, opts}; with
// opts.images (one per <|image|> of the prompt) the markers expanded, the images' rows as
// opts.soft (js/engine/vision.js) and images: {encoded, cached} (how many ran the tower)
export async function promptOf(engine, m) {
  const { images, maxImageTokens, ...opts } = m.opts ?? {};
  const p = await textPrompt(engine, m, opts);
  if (!images?.length) return p;
  if (p.opts.soft)
    throw new OxError('RANGE', 'softTokens and images cannot be combined in one request (the images are soft tokens)');
  const { tokens, soft, encoded, cached } = await withImages(engine, p.tokens, images, maxImageTokens);
  return { tokens, opts: { ...p.opts, soft }, images: { encoded, cached } };
}

async function textPrompt(engine, m, opts) {
  const { info } = engine;
  if (m.messages !== undefined) {
    const tokens = engine.tokenize(await chatText(engine, m), true);
    // a model turn ends at <turn|> by the format's definition, listed by the checkpoint or not
    if (!opts.stopIds && info.turnEnd >= 0 && !info.eosIds.includes(info.turnEnd))
      opts.stopIds = [...info.eosIds, info.turnEnd];
    return { tokens, opts };
  }
  if (typeof m.text === 'string') {
    const ids = engine.tokenize(m.text, true);
    return { tokens: withBos(ids, info.bos), opts };
  }
  if (!Array.isArray(m.tokens)) throw new OxError('RANGE', 'generate: the prompt must be text, token ids or messages');
  return { tokens: m.tokens, opts };
}
