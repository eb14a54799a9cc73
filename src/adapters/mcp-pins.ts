/**
 * Pinned tools at the gateway (`--mcp-server-name` with a `kind: McpServer` document on the
 * guard server). tools/list answers only pinned tools whose live fingerprint matches the
 * pinned one and that allow/deny permit; a tools/call of a changed, unpinned or hidden tool
 * is refused with a tool error saying why, and never forwarded. Names compare exactly.
 *
 * The server's initialize `instructions` go into the model's context as a description does:
 * when the document pins them and the live ones differ, `block` withholds them from the
 * initialize answer (the session goes on, the model never reads them) and `warn` passes
 * them; both report it as drift of kind `instructions`. A document of an earlier guardctl
 * (no `instructions` field) leaves them unchecked; each tool is checked by the fields its
 * own fingerprint covers (`sha256:` or `sha256-v2:`).
 *
 * Drift (a live tool whose fingerprint differs from its pin, a live tool not pinned, or
 * changed instructions) is reported once per tool, kind and declaration per document version (`report`,
 * and `onDrift`: the gateway sends it to the guard server, which counts
 * guard_mcp_tool_drift_total or guard_mcp_instructions_drift_total and records an event),
 * and counted here (`driftCounts`). With `warn`, drifted tools are listed and
 * forwarded anyway; hidden tools stay hidden in both modes. Tool names come from the
 * upstream: they are shown in printable form only, and at most MAX_REPORTED_DRIFTS distinct
 * drifts are reported per document version, so a server declaring endless tools cannot
 * flood the guard server or the log.
 *
 * The document is read at start and then polled (`refreshMs`); a poll that fails keeps the
 * document last read, so an unreachable guard server never lifts the pins. A document
 * deleted on the guard server lifts them (tools pass through unpinned, said loudly), except
 * with `requirePin`: then tools/list is empty and every call refused until one exists again.
 */
import {
  CURRENT_FINGERPRINT_VERSION,
  FINGERPRINTED_FIELDS,
  fingerprintVersionOf,
  mcpInstructionsFingerprint,
  mcpToolFingerprint,
  type FingerprintVersion,
  type FingerprintedTool,
} from '../gitops/canonical.js';
import { printableToolName, toolPermitted, type McpServerRecord } from '../model/index.js';

export type DriftKind = 'changed' | 'unpinned';
export type OnDrift = 'block' | 'warn';

export interface PinsOptions {
  serverName: string;
  mode: OnDrift;
  /** Reads the pinned document; null when nothing is pinned under the name. */
  fetch(): Promise<McpServerRecord | null>;
  report(line: string): void;
  /** Called once per drifted tool, kind and declaration per document version (a report to the guard server). */
  onDrift?(drift: Drift): void;
  /** --require-pin: without a document (deleted after start), list nothing and refuse every call. */
  requirePin?: boolean;
  /** Poll interval; 0: read once. */
  refreshMs?: number;
}

export type Drift =
  | {
      server: string;
      tool: string;
      kind: DriftKind;
      /** The fingerprint of the tool as the upstream declares it now (in the version of its pin). */
      fingerprint: string;
    }
  | {
      server: string;
      kind: 'instructions';
      /** The fingerprint of the instructions the upstream's initialize answer carries now. */
      fingerprint: string;
    };

/** Distinct drifts (tool, kind and declaration) reported per document version; past it they are refused or warned about silently. */
export const MAX_REPORTED_DRIFTS = 1000;

interface LiveTool {
  name?: unknown;
  title?: unknown;
  description?: unknown;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

/** The key of driftCounts and of what was reported for the instructions (no tool is named ''). */
const INSTRUCTIONS = '';

export class McpPins {
  #doc: McpServerRecord | null = null;
  #pinned = new Map<string, string>();
  #timer: NodeJS.Timeout | null = null;
  #started = false;
  /** Whether the MAX_REPORTED_DRIFTS line was said for this document version. */
  #floodSaid = false;
  readonly #seen = new Set<string>();
  readonly #said = new Set<string>();
  readonly #listeners = new Set<() => void>();
  /** Drifts seen, keyed `server\0tool\0kind` (the instructions: `server\0\0instructions`). */
  readonly driftCounts = new Map<string, number>();

  constructor(private readonly o: PinsOptions) {}

  /** Reads the document (throws when the guard server cannot be read); true when one is pinned. */
  async start(): Promise<boolean> {
    this.#use(await this.o.fetch());
    this.#started = true;
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

  /**
   * Calls `listener` whenever the document in force changes after start (applied, edited,
   * deleted): what tools/list answers may have changed. Returns the unsubscribe.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  get pinned(): boolean {
    return this.#doc !== null;
  }

  /** Whether tools/list answers pass through filterList: a document is in force, or --require-pin refuses everything without one. */
  get filtering(): boolean {
    return this.#doc !== null || this.o.requirePin === true;
  }

  /** The tools/list result with only the tools the model may see. */
  filterList(result: unknown): unknown {
    if (!this.filtering || result === null || typeof result !== 'object') return result;
    const tools = (result as { tools?: unknown }).tools;
    if (!Array.isArray(tools)) return result;
    if (!this.#doc) return { ...result, tools: [] };
    // An entry that is not an object is no tool (a null would otherwise throw here, and end the gateway).
    return { ...result, tools: tools.filter((tool: unknown) => typeof tool === 'object' && tool !== null && this.#refusal(tool as LiveTool) === null) };
  }

  /**
   * The initialize result as the client may read it: instructions that differ from the
   * pinned ones are withheld under `block` (and, with --require-pin and no document, any
   * instructions). Unchecked when the document does not pin them (an earlier guardctl's).
   */
  filterInitialize(result: Record<string, unknown>): Record<string, unknown> {
    if (!('instructions' in result)) return result;
    const { instructions: live, ...withheld } = result;
    if (!this.#doc) {
      if (this.o.requirePin !== true) return result;
      this.#sayOnce('require-pin', `the instructions of "${this.o.serverName}" are withheld: no kind: McpServer document is on the guard server, and the gateway runs with --require-pin`);
      return withheld;
    }
    const pinned = this.#doc.instructions;
    if (pinned === undefined) return result;
    let fingerprint: string;
    try {
      fingerprint = mcpInstructionsFingerprint(live);
    } catch {
      this.#sayOnce('instructions-depth', `the instructions of "${this.o.serverName}" are withheld: they nest too deeply to fingerprint`);
      return withheld;
    }
    if (fingerprint === mcpInstructionsFingerprint(pinned)) return result;
    this.#drift(INSTRUCTIONS, 'instructions', fingerprint);
    return this.o.mode === 'warn' ? result : withheld;
  }

  /** Why a call of `name` (whose live declaration is `live`, when the server declared it) is refused, or null. */
  callRefusal(name: string, live: unknown): string | null {
    if (!this.#doc) {
      if (this.o.requirePin !== true) return null;
      return `no kind: McpServer document named "${this.o.serverName}" is on the guard server (deleted), and the gateway runs with --require-pin: no tool is callable until one is applied again`;
    }
    return this.#refusal({ ...(typeof live === 'object' && live !== null ? live : {}), name });
  }

  #refusal(tool: LiveTool): string | null {
    const doc = this.#doc!;
    if (typeof tool.name !== 'string') return 'the tool has no name';
    const name = tool.name;
    const shown = printableToolName(name);
    if (!toolPermitted(doc, name)) return `tool "${shown}" is hidden by the pinned McpServer "${doc.name}" (allow_tools/deny_tools)`;
    const pin = this.#pinned.get(name);
    // Compared in the version of the pin: a pin of an earlier guardctl covers fewer fields.
    const version: FingerprintVersion = pin === undefined ? CURRENT_FINGERPRINT_VERSION : fingerprintVersionOf(pin);
    let live: string;
    try {
      const declared = { title: tool.title, description: tool.description, input_schema: tool.inputSchema, output_schema: tool.outputSchema, annotations: tool.annotations };
      live = mcpToolFingerprint(declared as FingerprintedTool, version);
    } catch {
      // Nested deeper than the stack goes: nothing can vouch for it, in either mode (and a throw here would end the gateway).
      return `tool "${shown}" cannot be fingerprinted (its declaration nests too deeply), so it is hidden and refused`;
    }
    const kind: DriftKind | null = pin === undefined ? 'unpinned' : pin !== live ? 'changed' : null;
    if (kind === null) return null;
    this.#drift(name, kind, live);
    if (this.o.mode === 'warn') return null;
    return kind === 'unpinned'
      ? `tool "${shown}" is not pinned in McpServer "${doc.name}" (names compare exactly); pin it with guardctl mcp-pin and apply`
      : `tool "${shown}" changed since it was pinned in McpServer "${doc.name}" (one of its ${FINGERPRINTED_FIELDS[version].join(', ')} differs); review and re-pin it`;
  }

  /** Says `line` once per document version. */
  #sayOnce(key: string, line: string): void {
    if (this.#said.has(key)) return;
    this.#said.add(key);
    this.o.report(line);
  }

  #drift(tool: string, kind: DriftKind | 'instructions', fingerprint: string): void {
    const key = `${this.o.serverName}\u0000${tool}\u0000${kind}`;
    // Each declaration is reported once: a second, different change to a tool is another rug pull.
    const reported = `${key}\u0000${fingerprint}`;
    if (!this.#seen.has(reported)) {
      if (this.#seen.size >= MAX_REPORTED_DRIFTS) {
        if (!this.#floodSaid) {
          this.#floodSaid = true;
          this.o.report(`drift: more than ${MAX_REPORTED_DRIFTS} drifted tools of "${this.o.serverName}"; further ones are ${this.o.mode === 'warn' ? 'forwarded' : 'refused'} without being reported`);
        }
        return;
      }
      this.#seen.add(reported);
      if (kind === 'instructions') {
        this.o.report(`drift: the instructions of "${this.o.serverName}" changed since they were pinned${this.o.mode === 'warn' ? ' (--on-drift warn: passed to the client)' : ' (withheld from the client)'}`);
        this.o.onDrift?.({ server: this.o.serverName, kind, fingerprint });
      } else {
        const shown = printableToolName(tool);
        this.o.report(`drift: tool "${shown}" of "${this.o.serverName}" is ${kind === 'changed' ? 'changed since it was pinned' : 'not pinned'}${this.o.mode === 'warn' ? ' (--on-drift warn: listed and forwarded)' : ' (hidden and refused)'}`);
        this.o.onDrift?.({ server: this.o.serverName, tool: shown, kind, fingerprint });
      }
    }
    this.driftCounts.set(key, (this.driftCounts.get(key) ?? 0) + 1);
  }

  #use(doc: McpServerRecord | null): void {
    const before = this.#doc;
    this.#doc = doc;
    this.#pinned = new Map((doc?.tools ?? []).map((t) => [t.name, t.fingerprint]));
    const changed = before?.updated_at !== doc?.updated_at;
    if (changed) {
      this.#seen.clear();
      this.#said.clear();
      this.#floodSaid = false;
    }
    if (before && !doc) {
      this.o.report(
        this.o.requirePin === true
          ? `the pinned document "${this.o.serverName}" was deleted: --require-pin lists no tool and refuses every call until one is applied again`
          : `the pinned document "${this.o.serverName}" was deleted: tools pass through UNPINNED (no drift is checked) until one is applied again; --require-pin refuses them instead`,
      );
    }
    if (!before && doc && this.#started) this.o.report(`a pinned document "${this.o.serverName}" is in force now`);
    if (changed && this.#started) for (const listener of this.#listeners) listener();
  }
}
