import { createHash } from 'node:crypto';

/** A tool the model knows by a name of its own as the client knows it: its name, its namespace's, whether it is a custom tool. */
export interface CalledAs {
  name: string;
  namespace?: string;
  /** A custom tool: its call is a `custom_tool_call` of the input the model wrote (custom-tools.ts). */
  custom?: true;
  /** A remote MCP server's tool: the service calls it (or asks for approval first) and the call is an `mcp_call` item. */
  mcp?: { server: string; approval: boolean };
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

  /** A custom tool outside any namespace: offered by its own name (a plain tool's, so `taken` holds it). */
  offerCustom(name: string): void {
    this.byModelName.set(name, { name, custom: true });
  }

  /** The name the model is offered for `name` of `namespace`. */
  offer(namespace: string, name: string, custom = false): string {
    return this.offerAs(namespace, name, `${namespace}\0${name}`, { name, namespace, ...(custom ? { custom: true as const } : {}) });
  }

  /**
   * The name the model is offered for tool `name` of MCP server `server`: as a namespace member's,
   * its characters outside a function name's replaced (MCP allows dots and more).
   */
  offerMcp(server: string, name: string, approval: boolean): string {
    const safe = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, '_');
    return this.offerAs(safe(server), safe(name), `mcp\0${server}\0${name}`, { name, mcp: { server, approval } });
  }

  private offerAs(namespace: string, name: string, member: string, calledAs: CalledAs): string {
    const joined = `${namespace}_${name}`;
    const hash = createHash('sha256').update(`${namespace}\0${name}`).digest('hex').slice(0, 8);
    const hashed = `${joined.slice(0, MAX_NAME - hash.length - 1)}_${hash}`;
    const candidates = joined.length <= MAX_NAME ? [name, joined, hashed] : [name, hashed];
    const modelName = candidates.find((candidate) => candidate.length <= MAX_NAME && !this.taken.has(candidate) && !this.byModelName.has(candidate));
    if (modelName === undefined) throw new Error(`no name left for ${namespace}.${name}`);
    this.byModelName.set(modelName, calledAs);
    this.byMember.set(member, modelName);
    return modelName;
  }

  /** Who the model's names stand for (namespace members, custom tools), for the output (stored with the response's settings). */
  calledAs(): Record<string, CalledAs> {
    return Object.fromEntries(this.byModelName);
  }

  /** The name the model knows a replayed call by: its offered name, else the member's own. */
  modelName(call: { name: string; namespace?: string }): string {
    return call.namespace === undefined ? call.name : (this.byMember.get(`${call.namespace}\0${call.name}`) ?? call.name);
  }

  /** The name the model knows a replayed MCP call by: its offered name, else the tool's own. */
  mcpModelName(server: string, name: string): string {
    return this.byMember.get(`mcp\0${server}\0${name}`) ?? name;
  }
}
