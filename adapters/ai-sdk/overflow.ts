// The recognition of context-length errors lives in the core (src/overflow.ts), shared by every adapter.
export { isContextLengthError, promptTokensFromError } from '../../src/overflow.ts';
