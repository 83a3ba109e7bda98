// The tool-pairing check providers apply, written independently of the guard's repair so that it
// can judge it: shared by the invariant checks of the tests and by the soak (bench/soak.ts).
import type { GuardMessage } from '../../src/index.ts';

/** Problems with tool-call / tool-result pairing, as providers check it; empty when valid. */
export function pairingProblems(messages: readonly GuardMessage[]): string[] {
  const problems: string[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as GuardMessage;
    if (m.role === 'tool') {
      // A tool message must follow an assistant message (possibly through other tool messages).
      let j = i - 1;
      while (j >= 0 && messages[j]?.role === 'tool') j--;
      const owner = messages[j];
      const calls = new Set(
        owner?.role === 'assistant' && Array.isArray(owner.content)
          ? owner.content.filter((p) => p.type === 'tool-call').map((p) => (p as { toolCallId: string }).toolCallId)
          : [],
      );
      for (const part of m.content) {
        if (part.type === 'tool-result' && !calls.has(part.toolCallId))
          problems.push(`message ${i}: result ${part.toolCallId} without its call`);
      }
    }
    if (m.role === 'assistant' && Array.isArray(m.content)) {
      const answered = new Set(
        m.content.filter((p) => p.type === 'tool-result').map((p) => (p as { toolCallId: string }).toolCallId),
      );
      for (let j = i + 1; j < messages.length && messages[j]?.role === 'tool'; j++) {
        for (const part of (messages[j] as { content: Array<{ type: string; toolCallId?: string }> }).content) {
          if (part.type === 'tool-result' && part.toolCallId) answered.add(part.toolCallId);
        }
      }
      for (const part of m.content) {
        if (part.type === 'tool-call' && !answered.has(part.toolCallId))
          problems.push(`message ${i}: call ${part.toolCallId} without its result`);
      }
    }
  }
  return problems;
}

/**
 * Why the output ends on an assistant message although the input did not (undefined: it does not).
 * Claude models from 4.6 on reject a prompt whose last message is an assistant message ("This
 * model does not support assistant message prefill"): when the host's prompt ends on a user or tool
 * message, the guard's must too. The input is read by its last message: entries that are not one
 * (junk the guard leaves out: no known role, content neither a string nor an array, a tool message
 * without an array of results) are passed over.
 */
export function prefillProblem(input: readonly unknown[], output: readonly GuardMessage[]): string | undefined {
  const before = lastRole(input);
  if (before !== 'user' && before !== 'tool') return undefined;
  const after = output[output.length - 1]?.role;
  return after === 'assistant'
    ? `the input ends on a ${before} message, the output on an assistant message`
    : undefined;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** The role of the last entry of `messages` that is a message. */
function lastRole(messages: readonly unknown[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | null | undefined;
    if (typeof m !== 'object' || m === null || Array.isArray(m) || !ROLES.has(m.role as string)) continue;
    const content = m.content;
    if (Array.isArray(content) || (typeof content === 'string' && m.role !== 'tool')) return m.role as string;
  }
  return undefined;
}
