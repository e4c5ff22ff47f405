/**
 * OpenAI's `stop` over text as it is generated: text is passed on as soon as it cannot be the
 * beginning of a stop sequence, and the answer ends just before the first stop sequence to
 * complete, of which nothing is ever passed on. What was held back is passed on when the answer
 * ends otherwise (max_tokens, end of generation): it turned out not to be a stop sequence.
 *
 * Each sequence is followed by a Knuth–Morris–Pratt matcher, so the text costs time linear in its
 * length, however long the stop sequences are (a rescan of the held-back text per token costs the
 * square of a long sequence's length).
 */
export class StopSequences {
  private readonly matchers: SequenceMatcher[];
  /** The text passed on so far: only ever appended to, never sliced. */
  private sent = '';
  /** Text generated and not passed on yet: it may begin a stop sequence. No longer than the longest one. */
  private held = '';
  private found = false;

  constructor(
    stop: readonly string[],
    private readonly emit: (text: string) => void,
  ) {
    this.matchers = stop.filter((sequence) => sequence.length > 0).map((sequence) => new SequenceMatcher(sequence));
  }

  /** Whether a stop sequence has come up: the answer is over, and later text is dropped. */
  get stopped(): boolean {
    return this.found;
  }

  /** Takes the next generated text; returns false once a stop sequence has come up. */
  push(chunk: string): boolean {
    if (this.found) return false;
    for (let index = 0; index < chunk.length; index += 1) {
      let completed = 0;
      for (const matcher of this.matchers) if (matcher.step(chunk[index])) completed = Math.max(completed, matcher.length);
      if (completed > 0) {
        // The sequence began in what was held back or in this chunk: what comes before it goes out.
        this.held = (this.held + chunk.slice(0, index + 1)).slice(0, -completed);
        this.found = true;
        this.flush(this.held.length);
        return false;
      }
    }
    this.held += chunk;
    // A partly matched sequence may still complete: its matched part is held back.
    let heldBack = 0;
    for (const matcher of this.matchers) heldBack = Math.max(heldBack, matcher.matched);
    this.flush(this.held.length - heldBack);
    return true;
  }

  /** Passes on whatever is held back: no more text is coming before something else is sent. */
  release(): void {
    this.flush(this.held.length);
    // Text passed on is no stop sequence's beginning any more.
    for (const matcher of this.matchers) matcher.matched = 0;
  }

  /** Passes on whatever is held back and returns the whole answer's text. */
  finish(): string {
    this.release();
    return this.sent;
  }

  /**
   * Passes on the first `ready` units of what is held back. Only that short tail is ever sliced:
   * slicing the whole answer, built by appending, would copy it on every token.
   */
  private flush(ready: number): void {
    if (ready <= 0) return;
    const text = this.held.slice(0, ready);
    this.held = this.held.slice(ready);
    this.sent += text;
    this.emit(text);
  }
}

/** How much of one sequence the text so far ends with, advanced one UTF-16 unit at a time. */
class SequenceMatcher {
  /** The length of the sequence's beginning that the text so far ends with. */
  matched = 0;
  /** At `length - 1`: the longest shorter beginning that is also an end of the first `length` units (KMP's failure function). */
  private readonly fallback: Int32Array;

  constructor(private readonly sequence: string) {
    this.fallback = new Int32Array(sequence.length);
    for (let index = 1, length = 0; index < sequence.length; index += 1) {
      while (length > 0 && sequence[index] !== sequence[length]) length = this.fallback[length - 1];
      if (sequence[index] === sequence[length]) length += 1;
      this.fallback[index] = length;
    }
  }

  get length(): number {
    return this.sequence.length;
  }

  /** Advances over one unit of text; true when the whole sequence has just been matched (the caller stops there). */
  step(unit: string): boolean {
    while (this.matched > 0 && this.sequence[this.matched] !== unit) this.matched = this.fallback[this.matched - 1];
    if (this.sequence[this.matched] === unit) this.matched += 1;
    return this.matched === this.sequence.length;
  }
}
