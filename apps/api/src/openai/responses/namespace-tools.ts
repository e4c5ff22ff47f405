import { createHash } from 'node:crypto';

/** A namespace member as the client knows it: its own name and its namespace's. */
export interface CalledAs {
  name: string;
  namespace: string;
}

/** Longest tool name the model is offered (OpenAI's function name limit). */
const MAX_NAME = 64;

/**
 * The names the model is offered for the members of `namespace` tools (Codex sends each MCP
 * server's tools as one), and the way back. A member keeps its own name where no other tool has
 * it, else `<namespace>_<name>`, cut to 64 characters with a hash where it is longer. The way back
 * is this table, never a split of the name (`mcp__x__tool` style names are the client's own).
 */
export class NamespacedToolNames {
  private readonly byModelName = new Map<string, CalledAs>();
  private readonly byMember = new Map<string, string>();

  /** `taken`: the names of the request's plain function tools. */
  constructor(private readonly taken: Set<string>) {}

  /** The name the model is offered for `name` of `namespace`. */
  offer(namespace: string, name: string): string {
    const joined = `${namespace}_${name}`;
    const hash = createHash('sha256').update(`${namespace}\0${name}`).digest('hex').slice(0, 8);
    const hashed = `${joined.slice(0, MAX_NAME - hash.length - 1)}_${hash}`;
    const candidates = joined.length <= MAX_NAME ? [name, joined, hashed] : [name, hashed];
    const modelName = candidates.find((candidate) => !this.taken.has(candidate) && !this.byModelName.has(candidate));
    if (modelName === undefined) throw new Error(`no name left for ${namespace}.${name}`);
    this.byModelName.set(modelName, { name, namespace });
    this.byMember.set(`${namespace}\0${name}`, modelName);
    return modelName;
  }

  /** The model's names of namespace members, for the output (stored with the response's settings). */
  calledAs(): Record<string, CalledAs> {
    return Object.fromEntries(this.byModelName);
  }

  /** The name the model knows a replayed call by: its offered name, else the member's own. */
  modelName(call: { name: string; namespace?: string }): string {
    return call.namespace === undefined ? call.name : (this.byMember.get(`${call.namespace}\0${call.name}`) ?? call.name);
  }
}
