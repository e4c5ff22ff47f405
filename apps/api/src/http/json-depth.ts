/**
 * Nesting depth is bounded before anything walks a request body: class-transformer and
 * class-validator recurse once per level, so ~2,000 levels in any field (a 4 KB body) would
 * overflow the stack. 64 levels is far more than any chat request needs (a content part sits at 4).
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN = new Set([0x5b, 0x7b]); // [ {
const CLOSE = new Set([0x5d, 0x7d]); // ] }

/** Where a JSON text first nests deeper than the limit, and the top-level field it happened in. */
export interface DepthViolation {
  field: string | null;
}

function decodeKey(quoted: string): string | null {
  try {
    const key: unknown = JSON.parse(quoted);
    return typeof key === 'string' && key.length <= 256 ? key : null;
  } catch {
    return null;
  }
}

/**
 * One pass over the text, iterative (no recursion, so no depth can hurt it): counts open
 * brackets outside strings. Malformed JSON may be misjudged here, but JSON.parse refuses it anyway.
 */
export function findDepthViolation(text: string, maxDepth = MAX_JSON_DEPTH): DepthViolation | undefined {
  // Nesting deeper than maxDepth takes more than maxDepth characters.
  if (text.length <= maxDepth) return undefined;
  let depth = 0;
  let inString = false;
  let stringStart = -1;
  let lastTopString: string | null = null;
  let field: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) {
        inString = false;
        if (depth === 1) lastTopString = text.slice(stringStart, i + 1);
      }
    } else if (code === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (OPEN.has(code)) {
      depth++;
      if (depth > maxDepth) return { field };
    } else if (CLOSE.has(code)) {
      depth--;
    } else if (code === COLON && depth === 1 && lastTopString !== null) {
      field = decodeKey(lastTopString);
      lastTopString = null;
    }
  }
  return undefined;
}
