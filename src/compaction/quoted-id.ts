// Ids the guard quotes into the prompt (a session id in an archive batch label, a tool-call id in a
// placeholder or a recall hint) come from the host or the model and may be of any length or shape.
// Quoted raw, a 60,000-character session id made every summary's footer longer than its budget. A
// long or unprintable id is quoted as its start and a hash of the whole: short, one line, stable
// (the same id always reads the same, so stored labels and prefixes stay byte-stable) and, with 64
// bits of hash, unique among the ids of a session. Recall accepts the quoted form as the id itself.

/** Longest id quoted as it is. */
const MAX_QUOTED_CHARS = 64;
/** Characters of a long id's start kept before its hash. */
const HEAD_CHARS = 24;

/** Two 32-bit FNV-1a variants over the UTF-16 code units: 16 hex digits. */
function hash64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0xcbf29ce4;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/** Whether the id can be quoted as it is: short, and nothing but printable characters other than quotes and backslashes. */
function quotable(id: string): boolean {
  return id.length <= MAX_QUOTED_CHARS && /^[^\s"\\\p{C}]*$/u.test(id);
}

/**
 * The id as the guard quotes it into a prompt: itself when short and printable, else its start (on
 * one line, without quotes) and a hash of the whole, e.g. `user-99999999999999999999…#1a2b3c4d5e6f7a8b`.
 */
export function quotedId(id: string): string {
  if (quotable(id)) return id;
  const head = Array.from(id.slice(0, HEAD_CHARS * 2))
    .filter((ch) => /^[^\s"\\\p{C}]$/u.test(ch))
    .slice(0, HEAD_CHARS)
    .join('');
  return `${head}…#${hash64(id)}`;
}
