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
