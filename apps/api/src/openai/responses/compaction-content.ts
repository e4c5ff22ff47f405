import type { ChatMessage } from '@app/contracts';
import { isRecord } from '@app/contracts';
import type { ConversationItem } from './response-items';
import { itemText } from './response-items';

/** How a compaction item's content introduces itself to the model that reads it. */
export const SUMMARY_HEADING = 'Summary of the conversation so far:';

/** At most this many characters of the last user messages are kept beside the summary. */
export const KEPT_USER_CHARS = 16_000;

/**
 * What a `compaction` item seals: the summary of the conversation before it and the user
 * messages kept as they were. An item that holds them stands for everything before it (so a
 * client may send its whole history, or only what follows the item, and the model reads the
 * same). Items sealed before `kept` existed hold the summary's text alone and stand only for
 * themselves.
 */
export interface CompactionContent {
  /** The summary as the model reads it (SUMMARY_HEADING first). */
  summary: string;
  kept?: string[];
}

/** What is sealed for a summary the model wrote and the user messages kept beside it. */
export const sealedForm = (summary: string, kept: string[]): string => JSON.stringify({ summary: `${SUMMARY_HEADING}\n\n${summary}`, kept });

/** What an opened item holds: the JSON of sealedForm, or (sealed before it) the summary's message itself. */
export function readCompaction(opened: string): CompactionContent {
  if (opened.startsWith('{')) {
    const parsed: unknown = JSON.parse(opened);
    if (isRecord(parsed) && typeof parsed.summary === 'string' && Array.isArray(parsed.kept))
      return { summary: parsed.summary, kept: parsed.kept.filter((text) => typeof text === 'string') };
  }
  return { summary: opened };
}

/** The messages the model reads for an item: the kept user messages, then the summary. */
export const compactionMessages = ({ summary, kept = [] }: CompactionContent): ChatMessage[] => [
  ...kept.map((content): ChatMessage => ({ role: 'user', content })),
  { role: 'user', content: summary },
];

/** Where the conversation the model reads starts: the last compaction item that stands for all before it, with what it holds. */
export function latestCompaction(
  items: ConversationItem[],
  open: (item: ConversationItem & { type: 'compaction' }, position: number) => CompactionContent,
): { position: number; content: CompactionContent } | undefined {
  const position = items.findLastIndex((item) => item.type === 'compaction');
  if (position < 0) return undefined;
  const content = open(items[position] as ConversationItem & { type: 'compaction' }, position);
  return content.kept ? { position, content } : undefined;
}

/**
 * The user messages a new compaction keeps: the last ones the model reads (those the latest
 * compaction kept, then those after it), in order, within KEPT_USER_CHARS (always the very last).
 */
export function keptUserTexts(items: ConversationItem[], latest: ReturnType<typeof latestCompaction>): string[] {
  const after = latest ? items.slice(latest.position + 1) : items;
  const texts = [
    ...(latest?.content.kept ?? []),
    ...after.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [itemText(item.content)] : [])),
  ];
  const kept: string[] = [];
  let chars = 0;
  for (const text of texts.reverse()) {
    chars += text.length;
    if (kept.length > 0 && chars > KEPT_USER_CHARS) break;
    kept.unshift(text);
  }
  return kept;
}
