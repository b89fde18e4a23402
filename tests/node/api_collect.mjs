// What a generate() / chat() stream produced: the token ids, the text and the final stats.
export async function collect(stream) {
  const tokens = [];
  let text = '';
  let stats = null;
  for await (const c of stream) {
    if (c.stats) stats = c.stats;
    else {
      if (c.token !== null) tokens.push(c.token);
      text += c.text;
    }
  }
  return { tokens, text, stats };
}
