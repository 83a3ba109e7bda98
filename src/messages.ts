// The message model the guard works on. It has the shape of the AI SDK's `ModelMessage`, so users
// of either framework already know it; the adapters convert to and from their own types. Unknown
// part types and `providerOptions` are carried through untouched, which is why every part type
// below allows extra fields.

/** Provider-specific options attached to a message or part; passed through untouched. */
export type ProviderOptions = Record<string, Record<string, unknown>>;

/** Binary or referenced data: base64 text, a data: or http(s): URL, raw bytes, or a URL object. */
export type DataContent = string | Uint8Array | ArrayBuffer | URL;

export interface TextPart {
  type: 'text';
  text: string;
  providerOptions?: ProviderOptions;
}

export interface ImagePart {
  type: 'image';
  image: DataContent;
  mediaType?: string;
  providerOptions?: ProviderOptions;
}

export interface FilePart {
  type: 'file';
  data: DataContent;
  mediaType: string;
  filename?: string;
  providerOptions?: ProviderOptions;
}

export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  providerOptions?: ProviderOptions;
}

export interface ToolCallPart {
  type: 'tool-call';
  toolCallId: string;
  toolName: string;
  /** The parsed tool input (any JSON value). */
  input: unknown;
  providerOptions?: ProviderOptions;
}

/** Items of a `content` tool output: text or media produced by the tool. */
export type ToolResultContentItem =
  | { type: 'text'; text: string; providerOptions?: ProviderOptions }
  | { type: 'media'; data: string; mediaType: string }
  | { type: 'image-data'; data: string; mediaType: string; providerOptions?: ProviderOptions }
  | { type: 'file-data'; data: string; mediaType: string; filename?: string; providerOptions?: ProviderOptions }
  | { type: string; [key: string]: unknown };

export type ToolResultOutput =
  | { type: 'text'; value: string; providerOptions?: ProviderOptions }
  | { type: 'json'; value: unknown; providerOptions?: ProviderOptions }
  | { type: 'error-text'; value: string; providerOptions?: ProviderOptions }
  | { type: 'error-json'; value: unknown; providerOptions?: ProviderOptions }
  | { type: 'execution-denied'; reason?: string; providerOptions?: ProviderOptions }
  | { type: 'content'; value: ToolResultContentItem[] };

export interface ToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: ToolResultOutput;
  providerOptions?: ProviderOptions;
}

/** A part type the guard does not know; counted by its JSON and passed through untouched. */
export interface UnknownPart {
  type: string;
  [key: string]: unknown;
}

export interface SystemMessage {
  role: 'system';
  content: string;
  providerOptions?: ProviderOptions;
}

export interface UserMessage {
  role: 'user';
  content: string | Array<TextPart | ImagePart | FilePart>;
  providerOptions?: ProviderOptions;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | Array<TextPart | FilePart | ReasoningPart | ToolCallPart | ToolResultPart>;
  providerOptions?: ProviderOptions;
}

export interface ToolMessage {
  role: 'tool';
  content: ToolResultPart[];
  providerOptions?: ProviderOptions;
}

export type GuardMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A function-tool definition; other fields (such as the AI SDK's `type: 'function'`) are ignored. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON schema of the tool's input. */
  inputSchema?: unknown;
  [key: string]: unknown;
}
