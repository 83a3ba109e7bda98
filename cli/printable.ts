// What the command prints comes from files anyone may hand it: a transcript's model id, a line of
// it quoted in a parse error, a file name. A control character in them would drive the terminal
// (ESC ] 0 ; … BEL sets its title, ESC [ 31 m its colours, a C1 CSI does the same on some
// terminals) and a bidirectional override would reorder what is shown. So everything printed
// passes through `printable`: those characters are shown as `\uXXXX` escapes. The line feed is kept
// (the command's own line breaks); inside JSON output the escapes are valid JSON escapes, in
// strings (the only place such characters can be: JSON.stringify escapes C0 itself).

/** C0 controls but the line feed, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates. */
export function isUnprintable(code: number): boolean {
  return (
    (code < 0x20 && code !== 0x0a) ||
    (code >= 0x7f && code <= 0x9f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/** `text` with every control character but the line feed (and every bidirectional override) escaped. */
export function printable(text: string): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!isUnprintable(code)) continue;
    out += `${text.slice(last, i)}\\u${code.toString(16).padStart(4, '0')}`;
    last = i + 1;
  }
  return last === 0 ? text : out + text.slice(last);
}
