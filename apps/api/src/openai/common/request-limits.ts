/** At most this many messages (chat) or conversation items (Responses) in one request. */
export const MAX_MESSAGES = 2048;

/** One message's text may not exceed this (the body limit bounds the sum). */
export const MAX_MESSAGE_CHARS = 256 * 1024;

/** OpenAI's pattern for function names. */
export const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Most tools a request may offer, and most calls one assistant message may hold. */
export const MAX_TOOLS = 128;
