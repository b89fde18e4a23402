// thought.js — chat() chunks with the thought channel apart: Gemma 4 writes its reasoning as
// `<|channel>thought\n…<channel|>`; a chunk inside it carries that text in `thought` (without
// the channel's name) and '' in `text`, so `text` is only the answer.

const NAME = 'thought\n';

/**
 * @param {AsyncIterable<object>} chunks token chunks ({token, text, thinking}) then {stats}
 * @returns {AsyncGenerator<object>} the same chunks with `thought` ('' outside the channel)
 */
export async function* splitThought(chunks) {
  let head = null; // the thought's text while it may still be the channel's name
  let inside = false;
  for await (const c of chunks) {
    if (c.stats) {
      if (head) yield { token: null, text: '', thinking: true, thought: head };
      yield c;
      continue;
    }
    if (!c.thinking) {
      inside = false;
      head = null;
      yield { ...c, thought: '' };
      continue;
    }
    if (!inside) [inside, head] = [true, ''];
    let thought = c.text;
    if (head !== null) {
      head += c.text;
      if (NAME.startsWith(head) && head !== NAME) thought = '';
      else [thought, head] = [head.startsWith(NAME) ? head.slice(NAME.length) : head, null];
    }
    yield { ...c, text: '', thought };
  }
}
