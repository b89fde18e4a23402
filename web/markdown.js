// Model replies as HTML: markdown by `marked`, then `DOMPurify` (the model's text is untrusted:
// a reply may contain HTML). Both elements and attributes are on allowlists of what markdown
// itself produces: anything that can fetch (img, srcset, svg href, link, style attributes with
// url(), table background, form action…) would be a request to a server of the model's
// choosing, and this page promises that nothing leaves the machine. The page's
// Content-Security-Policy (index.html) is the second fence (docs/security.md).
// Code blocks get a Copy button; links open in a new tab without an opener.
import { Marked } from 'marked';
import DOMPurify from 'dompurify';

const md = new Marked({ gfm: true, breaks: true });

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const PURIFY = {
  ALLOWED_TAGS: [
    'p',
    'br',
    'hr',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'strong',
    'b',
    'em',
    'i',
    'del',
    's',
    'code',
    'pre',
    'kbd',
    'sub',
    'sup',
    'blockquote',
    'ul',
    'ol',
    'li',
    'a',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
    'span',
    'div',
  ],
  // href only on <a> (a click, never a fetch); class carries the code block's language
  ALLOWED_ATTR: ['href', 'title', 'class', 'align', 'start'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

/** Safe HTML for markdown text. */
export function markdownToHtml(text) {
  return DOMPurify.sanitize(md.parse(String(text)), PURIFY);
}

/** Render text into el (replacing its content) and add Copy buttons to code blocks. */
export function renderMarkdown(el, text) {
  el.innerHTML = markdownToHtml(text);
  for (const pre of el.querySelectorAll('pre')) {
    const wrap = document.createElement('div');
    wrap.className = 'code';
    pre.replaceWith(wrap);
    const bar = document.createElement('div');
    bar.className = 'code-bar';
    const lang = /language-([\w+-]+)/.exec(pre.querySelector('code')?.className ?? '')?.[1] ?? '';
    const label = document.createElement('span');
    label.textContent = lang;
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy small secondary';
    copy.textContent = 'Copy';
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(pre.textContent);
        copy.textContent = 'Copied';
      } catch {
        copy.textContent = 'Copy failed';
      }
      setTimeout(() => {
        copy.textContent = 'Copy';
      }, 1500);
    });
    bar.append(label, copy);
    wrap.append(bar, pre);
  }
}
