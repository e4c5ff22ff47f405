/**
 * OpenAI's `stop` over text as it is generated: text is passed on as soon as it cannot be the
 * beginning of a stop sequence, and the answer ends just before the first stop sequence, of which
 * nothing is ever passed on. What was held back is passed on when the answer ends otherwise
 * (max_tokens, end of generation): it turned out not to be a stop sequence.
 */
export class StopSequences {
  private readonly sequences: string[];
  private text = '';
  private sent = 0;
  private found = false;

  constructor(
    stop: readonly string[],
    private readonly emit: (text: string) => void,
  ) {
    this.sequences = stop.filter((sequence) => sequence.length > 0);
  }

  /** Whether a stop sequence has come up: the answer is over, and later text is dropped. */
  get stopped(): boolean {
    return this.found;
  }

  /** Takes the next generated text; returns false once a stop sequence has come up. */
  push(chunk: string): boolean {
    if (this.found) return false;
    this.text += chunk;
    // Text before `sent` could not begin a stop sequence, so one can only begin from there.
    const stopAt = this.sequences.reduce((first, sequence) => {
      const at = this.text.indexOf(sequence, this.sent);
      return at >= 0 && (first < 0 || at < first) ? at : first;
    }, -1);
    if (stopAt >= 0) {
      this.text = this.text.slice(0, stopAt);
      this.found = true;
      this.flush(this.text.length);
      return false;
    }
    this.flush(this.text.length - this.heldBackLength());
    return true;
  }

  /** Passes on whatever is held back: no more text is coming before something else is sent. */
  release(): void {
    this.flush(this.text.length);
  }

  /** Passes on whatever is held back and returns the whole answer's text. */
  finish(): string {
    this.release();
    return this.text;
  }

  private flush(ready: number): void {
    if (ready <= this.sent) return;
    this.emit(this.text.slice(this.sent, ready));
    this.sent = ready;
  }

  /** Length of the longest tail of the text that begins some stop sequence. */
  private heldBackLength(): number {
    let longest = 0;
    for (const sequence of this.sequences) {
      for (let length = Math.min(sequence.length - 1, this.text.length - this.sent); length > longest; length -= 1) {
        if (this.text.endsWith(sequence.slice(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }
}
