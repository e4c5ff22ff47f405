import type { OutputSink } from '@app/contracts';

/**
 * A reasoning template's answer as llama-server streams it, split into thinking and answer: text
 * between the thought's prefix and suffix is reasoning, what follows is the answer. An answer that
 * starts in a thought (its prompt opened it) begins as reasoning; otherwise a thought counts only
 * at the very start. Text that may be the start of a marker waits for the next chunk.
 */
export class ThoughtSplitter {
  private state: 'start' | 'thought' | 'answer';
  private pending = '';
  /** Reasoning text so far. */
  reasoning = '';

  constructor(
    private readonly marks: { prefix: string; suffix: string } | undefined,
    /** Where the answer begins: in a thought its prompt opened, perhaps with one, or in the answer itself. */
    begins: 'in thought' | 'perhaps in thought' | 'in answer',
    private readonly output: OutputSink,
    private readonly answer: (text: string) => void,
  ) {
    this.state =
      marks === undefined || begins === 'in answer' || (begins === 'perhaps in thought' && marks.prefix === '')
        ? 'answer'
        : begins === 'in thought'
          ? 'thought'
          : 'start';
  }

  push(text: string): void {
    this.pending += text;
    for (;;) {
      if (this.state === 'answer') {
        const answer = this.pending;
        this.pending = '';
        if (answer !== '') this.answer(answer);
        return;
      }
      const { prefix, suffix } = this.marks!;
      if (this.state === 'start') {
        const trimmed = this.pending.trimStart();
        if (trimmed.startsWith(prefix)) {
          this.pending = trimmed.slice(prefix.length);
          this.state = 'thought';
        } else if (prefix.startsWith(trimmed))
          return; // may still become the prefix
        else this.state = 'answer';
        continue;
      }
      const end = this.pending.indexOf(suffix);
      if (end >= 0) {
        this.think(this.pending.slice(0, end));
        this.pending = this.pending.slice(end + suffix.length).replace(/^\s+/, '');
        this.state = 'answer';
        continue;
      }
      // Keep back what may be the start of the suffix.
      let held = Math.min(suffix.length - 1, this.pending.length);
      while (held > 0 && !suffix.startsWith(this.pending.slice(-held))) held--;
      this.think(this.pending.slice(0, this.pending.length - held));
      this.pending = this.pending.slice(this.pending.length - held);
      return;
    }
  }

  /** The answer ended: what was held back is its text (or thought) after all. */
  finish(): void {
    const rest = this.pending;
    this.pending = '';
    if (rest === '') return;
    if (this.state === 'thought') this.think(rest);
    else this.answer(rest);
  }

  private think(text: string): void {
    if (text === '') return;
    this.reasoning += text;
    this.output.write({ type: 'reasoning', choice: 0, text });
  }
}
