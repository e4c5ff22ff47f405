import type { PromptCachePolicy } from '@app/contracts';
import type { LlamaChat, LlamaContextSequence, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { toChatHistory } from './llama-chat-history';
import { busyNeighbours, commonPrefixLength, pickSequence } from './llama-prompt-cache';
import type { LlamaPromptRenderer, RenderedPrompt } from './llama-prompt-rendering';

/** Two chats on one context sequence: one as the template wants, one that must begin with a call. */
export interface SequenceChats {
  free: LlamaChat;
  mustCall: LlamaChat;
  /** The sequence's id: node-llama-cpp numbers a new context's sequences 0, 1, 2... as they are taken. */
  position: number;
}

/** What a finished job's sequence keeps: the whole prompt for the next of `n` choices, else what the request's cache policy says. */
export type KeptPart = 'whole prompt' | PromptCachePolicy;

/** Without a policy in the request: the whole conversation, answer included (its start is what other requests share). */
export const WHOLE_CONVERSATION: PromptCachePolicy = { implicit: true };

/**
 * The context's sequences between jobs: a job takes the idle one that holds the most of its prompt
 * (see llama-prompt-cache.ts), and gives it back holding the start that later prompts may reuse.
 */
export class LlamaSequences {
  /** Sequences not generating, in the order they fell idle. */
  private readonly idleChats: SequenceChats[];
  /** Idle sequences holding the prompt of a running job's next choice (see pickSequence). */
  private readonly keptForNextChoice = new WeakSet<SequenceChats>();
  readonly slots: number;

  constructor(
    chats: SequenceChats[],
    private readonly promptCache: boolean,
    private readonly prompts: LlamaPromptRenderer,
  ) {
    this.idleChats = [...chats];
    this.slots = chats.length;
  }

  /** Takes the idle sequence a prompt runs on, with how many of its first tokens that sequence holds already. */
  take(prompt: Token[]): { chats: SequenceChats; cachedTokens: number } {
    if (this.idleChats.length === 0) throw new Error('no free sequence: more jobs running than the engine has slots');
    const neighbours = busyNeighbours(
      this.idleChats.map(({ position }) => position),
      this.slots,
    );
    const idle = this.idleChats.map((chats, at) => ({
      contextTokens: chats.free.sequence.contextTokens,
      reserved: this.keptForNextChoice.has(chats),
      busyNeighbours: neighbours[at],
    }));
    const { index, cachedTokens } = pickSequence(idle, prompt);
    const [chats] = this.idleChats.splice(index, 1);
    return { chats, cachedTokens };
  }

  /** Makes a finished job's sequence idle again, erased down to the part of its prompt that `keep` names. */
  async giveBack(chats: SequenceChats, rendered: RenderedPrompt, keep: KeptPart): Promise<void> {
    // Both chats run on the one sequence.
    await this.keepReusableStart(chats.free.sequence, rendered, keep).catch(() => undefined);
    // Between choices the job still holds its slot, so another sequence is idle for other jobs.
    if (keep === 'whole prompt') this.keptForNextChoice.add(chats);
    else this.keptForNextChoice.delete(chats);
    this.idleChats.push(chats);
  }

  /** Erases all of a finished job's sequence but the start of its prompt that later prompts may reuse. */
  private async keepReusableStart(sequence: LlamaContextSequence, rendered: RenderedPrompt, keep: KeptPart): Promise<void> {
    const start = this.keptLength(sequence, rendered, keep);
    // node-llama-cpp takes the context's lock even to erase nothing.
    if (start >= sequence.nextTokenIndex) return;
    await sequence.eraseContextTokenRanges([{ start, end: sequence.nextTokenIndex }]);
  }

  /**
   * How much of a finished prompt its sequence keeps: what `keep` asks for, and never more than
   * the sequence holds (an aborted job may not have evaluated it all). None with PROMPT_CACHE off,
   * or for a model whose state cannot be cut short (sliding-window attention, recurrent:
   * node-llama-cpp would evaluate the kept part again there and then, for a job that may never come).
   */
  private keptLength(sequence: LlamaContextSequence, { messages, functions, prompt }: RenderedPrompt, keep: KeptPart): number {
    if (!this.promptCache || sequence.needsCheckpoints) return 0;
    const held = commonPrefixLength(sequence.contextTokens, prompt);
    // LlamaChat evaluates the prompt's last token itself, for the first answer token's probabilities.
    if (keep === 'whole prompt') return Math.min(held, prompt.length - 1);
    // The conversation, answer included, as llama.cpp's server keeps a slot: the next turn begins with it.
    if (keep.implicit) return sequence.nextTokenIndex;
    let wanted = 0;
    const marked = keep.breakpoint ? messages.at(keep.breakpoint.message) : undefined;
    // The conversation is rendered again only when the sequence holds more than is kept already.
    if (keep.breakpoint && marked && held > wanted) {
      const cut = [...messages.slice(0, keep.breakpoint.message), { ...marked, content: marked.content.slice(0, keep.breakpoint.offset) }];
      wanted = Math.max(wanted, this.prompts.startOf(prompt, toChatHistory(cut), functions));
    }
    return Math.min(wanted, held);
  }
}
