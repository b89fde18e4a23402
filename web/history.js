// Conversations kept in IndexedDB (database "oxinfer-demo", store "chats"), so a reload or a
// later visit finds them again. A chat: { id, title, updated, messages: [{ role, content,
// thinking?, meta? }] }. Every call opens the database anew: simple, and cheap next to a reply.

const DB = 'oxinfer-demo',
  STORE = 'chats';

function open() {
  return new Promise((resolve, reject) => {
    const rq = indexedDB.open(DB, 1);
    rq.onupgradeneeded = () => rq.result.createObjectStore(STORE, { keyPath: 'id' });
    rq.onsuccess = () => resolve(rq.result);
    rq.onerror = () => reject(rq.error);
  });
}

async function run(mode, fn) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const rq = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(rq?.result);
      tx.onerror = tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

export const newChatId = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

export function saveChat(chat) {
  const title = chat.messages.find((m) => m.role === 'user')?.content.slice(0, 60) || 'New chat';
  return run('readwrite', (s) => s.put({ ...chat, title, updated: Date.now() }));
}

export const getChat = (id) => run('readonly', (s) => s.get(id));
export const deleteChat = (id) => run('readwrite', (s) => s.delete(id));

/** All chats, newest first. */
export async function listChats() {
  const all = (await run('readonly', (s) => s.getAll())) ?? [];
  return all.sort((a, b) => b.updated - a.updated);
}
