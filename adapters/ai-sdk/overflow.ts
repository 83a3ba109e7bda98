// The recognition of context-length errors lives in the core (src/call/overflow.ts), shared by every adapter.
export { isContextLengthError, promptTokensFromError, windowFromError } from '../../src/index.ts';
