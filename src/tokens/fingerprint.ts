// How a prompt is identified and measured in the units calibration works in: plain data, shared by
// the measurer, the calibration, the memo and the stored session state.

/** Identifies a prompt well enough to tell whether a later prompt extends it. */
export interface PromptFingerprint {
  /** Number of messages. */
  messages: number;
  /** Heuristic characters of those messages (tools excluded). */
  chars: number;
  /** Hash of the messages' content, so an edited history is not mistaken for the same one. */
  hash: number;
}

/** The heuristic measure of one request, in the units calibration works in. */
export interface RequestMeasure {
  /** Characters of text sent (messages and tool definitions), the chars/4 heuristic's input. */
  chars: number;
  /** Provider tokens of images and files, counted by what providers charge (not calibrated). */
  mediaTokens: number;
  prompt: PromptFingerprint;
  /** Characters of the tool definitions (part of `chars`). */
  toolChars: number;
}
