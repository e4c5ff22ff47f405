import type { CallSyntax } from '@app/grammar';

/** A piece of a call as it is read: which call, its function, the next piece of its arguments. */
export interface CallChunk {
  callIndex: number;
  functionName: string;
  paramsChunk: string;
}

/** The length of the longest end of `text` that begins `marker` (text that may become it). */
function heldFor(text: string, marker: string): number {
  for (let length = Math.min(marker.length - 1, text.length); length > 0; length--) if (marker.startsWith(text.slice(-length))) return length;
  return 0;
}

/**
 * Reads the calls of a template's call syntax out of an answer as it streams (the calls' grammar
 * made it well-formed): text before the first call is the answer's, then each call's name and its
 * arguments piece by piece. A call's arguments end where their JSON value closes, so a string
 * holding the syntax's suffix does not end them.
 */
export class CallParser {
  private state: 'text' | 'name' | 'arguments' | 'suffix' | 'between' = 'text';
  private buffer = '';
  private calls = 0;
  private name = '';
  /** Where the arguments' JSON value stands: nesting, inside a string, after a backslash, a scalar. */
  private readonly json = { depth: 0, inString: false, escaped: false, scalar: false };

  constructor(
    private readonly syntax: CallSyntax,
    private readonly onText: (text: string) => void,
    private readonly onCall: (chunk: CallChunk) => void,
    /** The prompt ended with the first call's prefix: the answer starts with its name. */
    inCall = false,
  ) {
    if (inCall) this.state = 'name';
  }

  get called(): boolean {
    return this.calls > 0;
  }

  push(text: string): void {
    this.buffer += text;
    while (this.step());
  }

  /** The answer ended: text held back for a call that never came is the answer's. */
  finish(): void {
    if (this.state === 'text' && this.buffer !== '') this.onText(this.buffer);
    this.buffer = '';
  }

  /** Reads what it can of the buffer; true when it moved to another state (there may be more to read). */
  private step(): boolean {
    const { prefix, paramsPrefix, suffix, betweenCalls } = this.syntax;
    switch (this.state) {
      case 'text': {
        const at = this.buffer.indexOf(prefix);
        if (at < 0) {
          const held = heldFor(this.buffer, prefix);
          if (this.buffer.length > held) this.onText(this.buffer.slice(0, this.buffer.length - held));
          this.buffer = this.buffer.slice(this.buffer.length - held);
          return false;
        }
        if (at > 0) this.onText(this.buffer.slice(0, at));
        return this.moveOn(at + prefix.length, 'name');
      }
      case 'between':
        // Another call, or (the grammar allowing nothing else) the end.
        if (this.buffer.length < betweenCalls.length + prefix.length) return false;
        return this.buffer.startsWith(betweenCalls + prefix) ? this.moveOn(betweenCalls.length + prefix.length, 'name') : false;
      case 'name': {
        const at = this.buffer.indexOf(paramsPrefix);
        if (at < 0) return false;
        this.name = this.buffer.slice(0, at);
        Object.assign(this.json, { depth: 0, inString: false, escaped: false, scalar: false });
        this.calls++;
        return this.moveOn(at + paramsPrefix.length, 'arguments');
      }
      case 'arguments': {
        const end = this.argumentsEnd();
        // A scalar's end is only known at the suffix: what may be its start waits.
        const upTo = end ?? (this.json.scalar ? this.buffer.length - heldFor(this.buffer, suffix) : this.buffer.length);
        if (upTo > 0) this.onCall({ callIndex: this.calls - 1, functionName: this.name, paramsChunk: this.buffer.slice(0, upTo) });
        this.buffer = this.buffer.slice(upTo);
        if (end === undefined) return false;
        this.state = 'suffix';
        return true;
      }
      case 'suffix':
        return this.buffer.length >= suffix.length ? this.moveOn(suffix.length, 'between') : false;
    }
  }

  private moveOn(consumed: number, state: CallParser['state']): true {
    this.buffer = this.buffer.slice(consumed);
    this.state = state;
    return true;
  }

  /** Where the arguments' JSON value ends in the buffer, if it does. */
  private argumentsEnd(): number | undefined {
    const json = this.json;
    if (json.scalar) {
      const at = this.buffer.indexOf(this.syntax.suffix);
      return at < 0 ? undefined : at;
    }
    for (let index = 0; index < this.buffer.length; index++) {
      const char = this.buffer[index];
      if (json.inString) {
        if (json.escaped) json.escaped = false;
        else if (char === '\\') json.escaped = true;
        else if (char === '"') {
          json.inString = false;
          if (json.depth === 0) return index + 1; // a string for arguments
        }
      } else if (char === '"') json.inString = true;
      else if (char === '{' || char === '[') json.depth++;
      else if (char === '}' || char === ']') {
        if (--json.depth === 0) return index + 1;
      } else if (json.depth === 0 && char.trim() !== '') {
        json.scalar = true;
        return this.argumentsEnd();
      }
    }
    return undefined;
  }
}
