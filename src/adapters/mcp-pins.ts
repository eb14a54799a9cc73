/**
 * Pinned tools at the gateway (`--mcp-server-name` with a `kind: McpServer` document on the
 * guard server). tools/list answers only pinned tools whose live fingerprint matches the
 * pinned one and that allow/deny permit; a tools/call of a changed, unpinned or hidden tool
 * is refused with a tool error saying why, and never forwarded. Names compare exactly.
 *
 * Drift (a live tool whose fingerprint differs from its pin, or a live tool not pinned) is
 * reported once per tool and kind, and counted (`driftCounts`, in the shape of
 * guard_mcp_tool_drift_total{server,tool,kind}). With `warn`, drifted tools are listed and
 * forwarded anyway; hidden tools stay hidden in both modes.
 *
 * The document is read at start and then polled (`refreshMs`); a poll that fails keeps the
 * document last read, so an unreachable guard server never lifts the pins.
 */
import { mcpToolFingerprint } from '../gitops/canonical.js';
import { toolPermitted, type McpServerRecord } from '../model/index.js';

export type DriftKind = 'changed' | 'unpinned';
export type OnDrift = 'block' | 'warn';

export interface PinsOptions {
  serverName: string;
  mode: OnDrift;
  /** Reads the pinned document; null when nothing is pinned under the name. */
  fetch(): Promise<McpServerRecord | null>;
  report(line: string): void;
  /** Called once per drifted tool and kind (an event for the guard server, a metric). */
  onDrift?(drift: { server: string; tool: string; kind: DriftKind }): void;
  /** Poll interval; 0: read once. */
  refreshMs?: number;
}

interface LiveTool {
  name?: unknown;
  description?: unknown;
  inputSchema?: unknown;
  annotations?: unknown;
}

export class McpPins {
  #doc: McpServerRecord | null = null;
  #pinned = new Map<string, string>();
  #timer: NodeJS.Timeout | null = null;
  readonly #seen = new Set<string>();
  /** Drifts seen, keyed `server\0tool\0kind`. */
  readonly driftCounts = new Map<string, number>();

  constructor(private readonly o: PinsOptions) {}

  /** Reads the document (throws when the guard server cannot be read); true when one is pinned. */
  async start(): Promise<boolean> {
    this.#use(await this.o.fetch());
    if (this.o.refreshMs) {
      this.#timer = setInterval(() => void this.refresh(), this.o.refreshMs);
      this.#timer.unref();
    }
    return this.#doc !== null;
  }

  /** Reads the document again; a failed read keeps the one in force. */
  async refresh(): Promise<void> {
    try {
      this.#use(await this.o.fetch());
    } catch (error) {
      this.o.report(`could not read the pinned document "${this.o.serverName}" (keeping the one in force): ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  get pinned(): boolean {
    return this.#doc !== null;
  }

  /** The tools/list result with only the tools the model may see. */
  filterList(result: unknown): unknown {
    if (!this.#doc || result === null || typeof result !== 'object') return result;
    const tools = (result as { tools?: unknown }).tools;
    if (!Array.isArray(tools)) return result;
    return { ...result, tools: tools.filter((tool: LiveTool) => this.#refusal(tool) === null) };
  }

  /** Why a call of `name` (whose live declaration is `live`, when the server declared it) is refused, or null. */
  callRefusal(name: string, live: unknown): string | null {
    if (!this.#doc) return null;
    return this.#refusal({ ...(typeof live === 'object' && live !== null ? live : {}), name });
  }

  #refusal(tool: LiveTool): string | null {
    const doc = this.#doc!;
    if (typeof tool.name !== 'string') return 'the tool has no name';
    const name = tool.name;
    if (!toolPermitted(doc, name)) return `tool "${name}" is hidden by the pinned McpServer "${doc.name}" (allow_tools/deny_tools)`;
    const pin = this.#pinned.get(name);
    const live = mcpToolFingerprint({ description: tool.description as string | undefined, input_schema: tool.inputSchema, annotations: tool.annotations });
    const kind: DriftKind | null = pin === undefined ? 'unpinned' : pin !== live ? 'changed' : null;
    if (kind === null) return null;
    this.#drift(name, kind);
    if (this.o.mode === 'warn') return null;
    return kind === 'unpinned'
      ? `tool "${name}" is not pinned in McpServer "${doc.name}" (names compare exactly); pin it with guardctl mcp-pin and apply`
      : `tool "${name}" changed since it was pinned in McpServer "${doc.name}" (its description, input schema or annotations differ); review and re-pin it`;
  }

  #drift(tool: string, kind: DriftKind): void {
    const key = `${this.o.serverName}\u0000${tool}\u0000${kind}`;
    this.driftCounts.set(key, (this.driftCounts.get(key) ?? 0) + 1);
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    this.o.report(`drift: tool "${tool}" of "${this.o.serverName}" is ${kind === 'changed' ? 'changed since it was pinned' : 'not pinned'}${this.o.mode === 'warn' ? ' (--on-drift warn: listed and forwarded)' : ' (hidden and refused)'}`);
    this.o.onDrift?.({ server: this.o.serverName, tool, kind });
  }

  #use(doc: McpServerRecord | null): void {
    const before = this.#doc;
    this.#doc = doc;
    this.#pinned = new Map((doc?.tools ?? []).map((t) => [t.name, t.fingerprint]));
    if (before?.updated_at !== doc?.updated_at) this.#seen.clear();
    if (before && !doc) this.o.report(`the pinned document "${this.o.serverName}" was deleted: tools pass through unpinned`);
  }
}
