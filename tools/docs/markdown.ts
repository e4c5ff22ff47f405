/**
 * What the documentation checks need of Markdown as GitHub renders it: the anchors its headings
 * get and the links a page holds. Fenced code and inline code are not Markdown, so neither
 * holds links or headings.
 */

/**
 * GitHub's anchor for a heading (github-slugger): the heading's text as rendered, lower-cased,
 * every character dropped but letters, marks, numbers, connector punctuation (`_`), spaces and
 * hyphens, then each space a hyphen. A repeated anchor gets `-1`, `-2`, … in page order.
 */
export function headingSlug(renderedText: string): string {
  return renderedText
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** A heading's text as GitHub renders it: code spans keep their text, links their label, emphasis and HTML tags go. */
export function renderedHeadingText(markdown: string): string {
  return markdown
    .replace(/`([^`]*)`/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|__|\*)(\S(?:.*?\S)?)\1/g, '$2')
    .trim();
}

export interface MarkdownLink {
  target: string;
  line: number;
}

export interface MarkdownOutline {
  /** Every anchor the page's headings (and explicit `<a id>` / `<a name>`) provide. */
  anchors: Set<string>;
  links: MarkdownLink[];
}

/** Headings (ATX `#` style) and links (`[text](target)`, `<a href>`, `[label]: target`) outside code. */
export function outline(markdown: string): MarkdownOutline {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const links: MarkdownLink[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((rawLine, index) => {
    const line = index + 1;
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(rawLine);
    if (fence !== undefined) {
      if (fenceMatch && fenceMatch[1][0] === fence[0] && fenceMatch[1].length >= fence.length && rawLine.trim() === fenceMatch[1]) fence = undefined;
      return;
    }
    if (fenceMatch) {
      fence = fenceMatch[1];
      return;
    }
    const text = rawLine.replace(/(`+)(?:(?!\1).)+?\1/g, '');
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(rawLine);
    if (heading) {
      const base = headingSlug(renderedHeadingText(heading[1]));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of text.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
    for (const match of text.matchAll(/!?\[(?:[^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1], line });
    for (const match of text.matchAll(/<a\s[^>]*\bhref="([^"]+)"/g)) links.push({ target: match[1], line });
    const reference = /^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(text);
    if (reference) links.push({ target: reference[1], line });
  });
  return { anchors, links };
}

/** Links that leave the repository (a scheme or a protocol-relative URL) are not checked here. */
export const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
