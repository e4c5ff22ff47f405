import type { ChatMessage, PromptCachePolicy } from '@app/contracts';

/** A conversation with a run of its oldest messages left out: `dropped` of them from index `from`. */
export interface TruncatedConversation {
  messages: ChatMessage[];
  from: number;
  dropped: number;
}

/**
 * Where the kept part of a conversation may begin: its system messages at the start (the
 * instructions) always stay, and what follows them may begin at the first message (nothing
 * dropped) or at any later user message, so no template sees a turn open with an assistant's
 * answer or a tool's result whose call was dropped. The last message always stays.
 */
function keptStarts(messages: ChatMessage[]): { from: number; starts: number[] } {
  let from = 0;
  while (from < messages.length - 1 && messages[from].role === 'system') from++;
  const starts = [from];
  for (let index = from + 1; index < messages.length; index++) if (messages[index].role === 'user') starts.push(index);
  return { from, starts };
}

const leaveOut = (messages: ChatMessage[], from: number, start: number): TruncatedConversation => ({
  messages: [...messages.slice(0, from), ...messages.slice(start)],
  from,
  dropped: start - from,
});

/**
 * OpenAI's `truncation: "auto"`: the conversation with the fewest of its oldest items dropped for
 * which `fits` holds (prompt and answer within the model's context), found by a binary search over
 * where the kept part may begin (a few renderings, not one per message). Undefined when even the
 * shortest conversation does not fit; `fits` throwing is its own error, not a reason to drop more.
 */
export function fitConversation(messages: ChatMessage[], fits: (messages: ChatMessage[]) => boolean): TruncatedConversation | undefined {
  const { from, starts } = keptStarts(messages);
  if (fits(messages)) return { messages, from, dropped: 0 };
  let low = 1;
  let high = starts.length - 1;
  let found: TruncatedConversation | undefined;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const candidate = leaveOut(messages, from, starts[middle]);
    if (fits(candidate.messages)) {
      found = candidate;
      high = middle - 1;
    } else {
      low = middle + 1;
    }
  }
  return found;
}

/** A prompt-cache breakpoint of the whole conversation, moved to the same message of the truncated one (gone with it when it was dropped). */
export function truncatedCachePolicy(policy: PromptCachePolicy | undefined, { from, dropped }: TruncatedConversation): PromptCachePolicy | undefined {
  const breakpoint = policy?.breakpoint;
  if (!policy || !breakpoint || dropped === 0 || breakpoint.message < from) return policy;
  if (breakpoint.message < from + dropped) return { implicit: policy.implicit };
  return { ...policy, breakpoint: { ...breakpoint, message: breakpoint.message - dropped } };
}
