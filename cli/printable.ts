// What the command prints comes from files anyone may hand it: a transcript's model id, a line of
// it quoted in a parse error, a file name. A control character in them would drive the terminal
// (ESC ] 0 ; … BEL sets its title, ESC [ 31 m its colours, a C1 CSI does the same on some
// terminals) and a bidirectional override would reorder what is shown. So everything printed
// passes through `printable`: those characters are shown as `\uXXXX` escapes. The line feed is kept
// (the command's own line breaks); inside JSON output the escapes are valid JSON escapes, in
// strings (the only place such characters can be: JSON.stringify escapes C0 itself).

/** C0 controls but the line feed, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates. */
const UNPRINTABLE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character but the line feed (and every bidirectional override) escaped. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
