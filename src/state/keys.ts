// The keys the guard hands its store. One store holds several kinds of record per session (its
// state, its archive), so a key names the kind and the session, and no session id, whatever string
// it is, can stand for another session's key or another kind of record:
// - a session's state is kept under its id as it is (what stores saw before archives existed), unless
//   the id starts with the unit separator (U+001F), the mark of every other key;
// - every other record, and the state of an id that starts with the mark, is
//   `\u001f<kind>\u001f<session id>`; a kind never contains the mark, so the kind and the id read back
//   unambiguously.
// The mapping is one-to-one: `parseRecordKey` gives back exactly the kind and id a key was made of,
// which is how a store that lays records out itself (RedisStore: one hash slot per session) reads them.

/** The kinds of record the guard keeps per session. */
export type RecordKind = 'state' | 'archive';

const MARK = '\u001f';
const KINDS: ReadonlySet<string> = new Set<RecordKind>(['state', 'archive']);

/** The store key of a session's record of one kind. */
export function recordKey(kind: RecordKind, sessionId: string): string {
  if (kind === 'state' && !sessionId.startsWith(MARK)) return sessionId;
  return `${MARK}${kind}${MARK}${sessionId}`;
}

/**
 * The kind and session id a store key was made of (the inverse of `recordKey`); undefined for a
 * string `recordKey` never makes (the mark, then no known kind, or the state form of an id without
 * the mark), so that a store reading keys this way maps different keys to different records.
 */
export function parseRecordKey(key: string): { kind: RecordKind; sessionId: string } | undefined {
  if (!key.startsWith(MARK)) return { kind: 'state', sessionId: key };
  const end = key.indexOf(MARK, 1);
  const kind = end > 0 ? key.slice(1, end) : '';
  if (!KINDS.has(kind)) return undefined;
  const sessionId = key.slice(end + 1);
  if (kind === 'state' && !sessionId.startsWith(MARK)) return undefined;
  return { kind: kind as RecordKind, sessionId };
}
