// Images in the demo's conversation: attach (file pick, paste into the message box, drop on
// the page), a tray of the pending ones, thumbnails in the user's bubbles, and the content
// parts chat() takes (docs/images.md). Only shown for a model with a vision tower
// (model.info.vision). A history message keeps its images as Blobs ({role, content, images}),
// which IndexedDB stores as they are.

const THUMB = 96; // thumbnail side, CSS pixels

const pending = []; // Blobs waiting for the next message
let ui = null;
let enabled = false;

const isImage = (f) => f instanceof Blob && /^image\//.test(f.type);

// a small data: URL of the image (the page's CSP allows data: images, not blob: ones)
async function thumbnail(blob) {
  const bmp = await createImageBitmap(blob);
  const s = Math.min(1, (THUMB * (window.devicePixelRatio || 1)) / Math.max(bmp.width, bmp.height));
  const c = document.createElement('canvas');
  c.width = Math.max(1, Math.round(bmp.width * s));
  c.height = Math.max(1, Math.round(bmp.height * s));
  c.getContext('2d').drawImage(bmp, 0, 0, c.width, c.height);
  bmp.close();
  return c.toDataURL('image/png');
}

/** A row of thumbnails for these images (removable: each gets a × calling onRemove(i)). */
export function thumbnails(images, onRemove = null) {
  const row = document.createElement('div');
  row.className = 'thumbs';
  images.forEach((blob, i) => {
    const fig = document.createElement('span');
    fig.className = 'thumb';
    const img = document.createElement('img');
    img.alt = blob.name ? `image ${blob.name}` : `image ${i + 1}`;
    thumbnail(blob).then(
      (url) => (img.src = url),
      () => (img.alt = `${img.alt} (not an image this browser decodes)`),
    );
    fig.append(img);
    if (onRemove) {
      const x = document.createElement('button');
      x.type = 'button';
      x.className = 'close';
      x.setAttribute('aria-label', `Remove ${img.alt}`);
      x.textContent = '×';
      x.addEventListener('click', () => onRemove(i));
      fig.append(x);
    }
    row.append(fig);
  });
  return row;
}

function paintTray() {
  ui.tray.replaceChildren(
    ...(pending.length
      ? [
          thumbnails(pending, (i) => {
            pending.splice(i, 1);
            paintTray();
          }),
        ]
      : []),
  );
  ui.tray.hidden = !pending.length;
}

/** Add images to the next message; false when none of the files is an image or the model takes none. */
export function attachImages(files) {
  const imgs = [...files].filter(isImage);
  if (!enabled || !imgs.length) return false;
  pending.push(...imgs);
  paintTray();
  return true;
}

/** The pending images, handed over to a message (the tray empties). */
export function takeImages() {
  const out = pending.splice(0);
  paintTray();
  return out;
}

/** Whether drops and pastes of images attach them: the model has a vision tower. */
export function setImagesEnabled(model) {
  enabled = !!model?.info?.vision;
  ui.attach.hidden = !enabled;
  if (!enabled && pending.length) takeImages();
}

/** A history message as chat() takes it: its images first, then its text (as Gemma 4's
 *  prompts put them). */
export function contentOf(m) {
  if (!m.images?.length) return m.content;
  return [...m.images.map((image) => ({ type: 'image', image })), { type: 'text', text: m.content }];
}

export function initAttach(els) {
  ui = els;
  ui.attachInput.addEventListener('change', () => {
    attachImages(ui.attachInput.files);
    ui.attachInput.value = '';
  });
  ui.prompt.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (attachImages(files)) e.preventDefault();
  });
  paintTray();
}
