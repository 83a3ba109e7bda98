// Redis keys of a session's records: `<prefix>{<encoded session id>}:<kind>`. The braces are the
// session's cluster hash tag (Redis hashes only what is between the first `{` and the next `}`), so
// all of a session's keys live in one slot. The encoding keeps ids readable and is one-to-one:
// - `%`, `{`, `}`, control characters and lone surrogates (which a client would turn into U+FFFD,
//   making two ids one) are escaped: `%XX` for a character below U+0100, `%uXXXX` for a surrogate;
//   everything else is kept as it is (a JavaScript string goes to Redis as UTF-8);
// - the empty id is `%-`;
// - an id whose encoding is longer than LONG_ID keeps its first characters and ends in `%~` and a
//   SHA-256 of the whole encoding (`%~` and `%-` appear in no other encoding: after a `%` come two
//   hex digits or `u`).
import { createHash } from 'node:crypto';

export type KeyKind = 'state' | 'archive' | 'lock' | 'fence';

/** Encodings longer than this end in a hash. */
const LONG_ID = 200;
/** Characters of a long id's encoding kept before its hash. */
const LONG_HEAD = 100;

const hex = (code: number, width: number) => code.toString(16).toUpperCase().padStart(width, '0');

function escaped(id: string): string {
  let out = '';
  let plain = 0;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    let code: string | undefined;
    if (c === 0x25 || c === 0x7b || c === 0x7d || c < 0x20 || (c >= 0x7f && c <= 0x9f)) code = `%${hex(c, 2)}`;
    else if (c >= 0xd800 && c <= 0xdfff) {
      const next = id.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++; // a pair: one character, kept as it is
        continue;
      }
      code = `%u${hex(c, 4)}`;
    } else continue;
    out += id.slice(plain, i) + code;
    plain = i + 1;
  }
  return plain === 0 ? id : out + id.slice(plain);
}

/** The session id as it appears in keys (and as the hash tag). */
export function encodeSessionId(sessionId: string): string {
  if (sessionId === '') return '%-';
  const full = escaped(sessionId);
  if (full.length <= LONG_ID) return full;
  // Cut at an escape's start, never inside one.
  let cut = LONG_HEAD;
  const lastEscape = full.lastIndexOf('%', cut);
  if (lastEscape >= 0 && lastEscape > cut - 6 && lastEscape < cut) cut = lastEscape;
  return `${full.slice(0, cut)}%~${createHash('sha256').update(full).digest('hex').slice(0, 32)}`;
}

export function redisKey(prefix: string, sessionId: string, kind: KeyKind): string {
  return `${prefix}{${encodeSessionId(sessionId)}}:${kind}`;
}
