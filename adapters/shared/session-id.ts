// The session of a call that names none: derived from the conversation's stable start (its system
// messages and first user message), which every later call of the same conversation repeats. Two
// conversations through one wrapped model then never share calibration or summaries, while a
// stateless host that resends its history keeps finding the same session.

/** FNV-1a over UTF-16 code units, two seeds for a 64-bit key: collisions are not a practical risk. */
function fnv(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

function stableJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) =>
      v instanceof Uint8Array ? `bytes:${v.byteLength}:${fnv(String.fromCharCode(...v.subarray(0, 4096)), 0x811c9dc5)}` : v instanceof URL ? v.href : v,
    ) ?? '';
  } catch {
    return String(value);
  }
}

/** `auto:` and a hex key of the prompt's system messages and first user message. */
export function deriveSessionId(prompt: readonly unknown[]): string {
  const start: unknown[] = [];
  for (const message of Array.isArray(prompt) ? prompt : []) {
    const role = (message as { role?: unknown })?.role;
    if (role === 'system') start.push(message);
    else if (role === 'user') {
      start.push((message as { content?: unknown }).content);
      break;
    }
  }
  const text = stableJson(start);
  return `auto:${fnv(text, 0x811c9dc5).toString(16).padStart(8, '0')}${fnv(text, 0x9747b28c).toString(16).padStart(8, '0')}`;
}
