/**
 * The tools the MCP server declared (`tools/list`), as the gateway knows them. A
 * tools/call is relayed only when its name is one of them exactly: some servers match a
 * name loosely (case, width, whitespace, invisible characters), and a control scoped to
 * `run_sql` must not be escaped by calling `RUN_SQL` or `run_sql\u200b`.
 *
 * The list is read by the gateway itself (mcp-declared.ts).
 */

import { ErrorCode, isJSONRPCResultResponse, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson } from '../gitops/canonical.js';
import { DeclaredList, type ListPage } from './mcp-declared.js';
import type { McpPins } from './mcp-pins.js';
import { folded, shown } from './mcp-text.js';

export class UpstreamTools {
  readonly #list: DeclaredList;

  constructor(
    listPage: ListPage,
    /** A pinned server's rules, when the gateway has a pinned document (mcp-pins.ts). */
    private readonly pins?: McpPins,
  ) {
    this.#list = new DeclaredList(listPage, 'tools');
  }

  /**
   * Why a tools/call of `name` is refused, or null: not a tool the server declared, or (with
   * pins) one changed, unpinned or hidden. The refusal is a tool error the model reads, as
   * MCP servers answer an unknown tool, so the gateway changes no answer's kind.
   */
  async refusalOf(name: string, args?: unknown): Promise<{ report: string; text: string } | null> {
    const { names: declared, declared: declarations } = await this.#list.read();
    const declaration = declarations.get(name);
    if (!declared.has(name)) {
      return { report: 'not a tool the MCP server declared', text: `MCP error ${ErrorCode.InvalidParams}: ${shown(name)} is not a tool the MCP server declared (tool names are compared exactly)` };
    }
    const misnamed = misnamedArgument(declaration, args);
    if (misnamed !== null) {
      const [key, parameter] = misnamed.map(shown);
      return {
        report: `its argument ${key} is not the declared parameter ${parameter}, which a lenient server would read it as`,
        text: `MCP error ${ErrorCode.InvalidParams}: argument ${key} is not a parameter of ${shown(name)}: write ${parameter}, exactly (argument names are compared exactly)`,
      };
    }
    const pinned = this.pins?.callRefusal(name, declaration) ?? null;
    return pinned === null ? null : { report: pinned, text: `The guard refused this call: ${pinned}.` };
  }

  /**
   * A server's answer on its way to the client: a tools/list result keeps only the tools the
   * pins let the model see (none with --require-pin and no document); an initialize result
   * loses instructions that differ from the pinned ones.
   */
  answer<M extends JSONRPCMessage>(message: M, method: string): M {
    if (method === 'tools/list' && isJSONRPCResultResponse(message)) this.#forgetIfOutdated(message.result);
    if (!this.pins || !isJSONRPCResultResponse(message)) return message;
    if (method === 'initialize') return { ...message, result: this.pins.filterInitialize(withToolListChanges(message.result)) };
    if (!this.pins.filtering || method !== 'tools/list') return message;
    return { ...message, result: this.pins.filterList(message.result) };
  }

  /**
   * Forgets the list the gateway holds when a tools/list answer declares a tool otherwise
   * (or one it does not hold): a server that changes a tool without
   * notifications/tools/list_changed would otherwise have its calls checked against the
   * declaration read before, pins and argument names alike.
   */
  #forgetIfOutdated(result: Record<string, unknown>): void {
    const held = this.#list.held;
    const tools = result.tools;
    if (held === null || !Array.isArray(tools)) return;
    for (const tool of tools as unknown[]) {
      const name = (tool as { name?: unknown } | null)?.name;
      if (typeof name !== 'string') continue;
      let same: boolean;
      try {
        same = held.names.has(name) && canonicalJson(held.declared.get(name)) === canonicalJson(tool);
      } catch {
        // Nested deeper than the stack goes: it cannot be told the same.
        same = false;
      }
      if (!same) {
        this.#list.invalidate();
        return;
      }
    }
  }

  /** The declared names, read from the server when not known. */
  names(): Promise<ReadonlySet<string>> {
    return this.#list.names();
  }

  /** The server's list changed: read it again before the next call. */
  invalidate(): void {
    this.#list.invalidate();
  }
}

/** An object schema's declared properties, by their folded spelling. */
const NO_PROPERTIES: Record<string, unknown> = Object.freeze({});
const parametersOf = new WeakMap<object, Map<string, string>>();

/**
 * An argument that is not a declared parameter but one spelt otherwise (`PATH` or `path\u200b`
 * for `path`), with that parameter; null when there is none. Some servers match argument
 * names loosely (Go's encoding/json matches any case, the last match winning), so a
 * control reading `input.path` would check one value while the tool acts on another. The
 * same holds inside an argument whose schema declares properties of its own (an object, the
 * objects of an array's `items` or the values of a map's `additionalProperties`), which a
 * control reads as `input.options.path`.
 */
export function misnamedArgument(tool: unknown, args: unknown): [string, string] | null {
  if (!isRecord(tool)) return null;
  const root = tool.inputSchema;
  // Each schema is walked once per value: a $ref or an anyOf may name a schema it is part of.
  const walked = new WeakMap<object, WeakSet<object>>();
  // Walked without recursion: a client's arguments may nest deeper than the stack.
  const todo: Array<[schema: unknown, value: unknown]> = [[root, args]];
  while (todo.length > 0) {
    const [schema, value] = todo.pop()!;
    if (!isRecord(schema) || typeof value !== 'object' || value === null) continue;
    const values = walked.get(schema) ?? new WeakSet<object>();
    if (values.has(value)) continue;
    values.add(value);
    walked.set(schema, values);
    // The schemas a value must or may match, or that a reference names (Pydantic's $defs, a nullable object's anyOf): a lenient server reads it by any of them.
    for (const combined of [schema.allOf, schema.anyOf, schema.oneOf]) if (Array.isArray(combined)) for (const s of combined) todo.push([s, value]);
    if (typeof schema.$ref === 'string') todo.push([referenced(root, schema.$ref), value]);
    if (Array.isArray(value)) {
      for (const item of value) todo.push([schema.items, item]);
      continue;
    }
    const properties = isRecord(schema.properties) ? schema.properties : NO_PROPERTIES;
    let parameters = parametersOf.get(properties);
    if (!parameters) {
      parameters = new Map(Object.keys(properties).map((p) => [folded(p), p]));
      parametersOf.set(properties, parameters);
    }
    for (const [key, item] of Object.entries(value)) {
      if (Object.hasOwn(properties, key)) {
        todo.push([properties[key], item]);
        continue;
      }
      const parameter = parameters.get(folded(key));
      if (parameter !== undefined) return [key, parameter];
      // A map's values (Pydantic's dict[str, Model]) are declared by additionalProperties: a control reads input.files.main.path.
      todo.push([schema.additionalProperties, item]);
    }
  }
  return null;
}

/** The schema a local reference (`#/$defs/Options`) names in the input schema; undefined for any other. */
function referenced(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let at: unknown = root;
  for (const part of ref.slice(1).split('/').slice(1)) {
    if (!isRecord(at)) return undefined;
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~');
    at = Object.hasOwn(at, name) ? at[name] : undefined;
  }
  return at;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A pinned gateway's initialize answer declares `tools.listChanged`: when the pinned document
 * changes, the tools the model may see change with it, and the gateway tells each client
 * (notifications/tools/list_changed) so that none keeps showing a tool it now refuses. A
 * server that declares no tools capability has no tools to hide; its answer is unchanged.
 */
function withToolListChanges(result: Record<string, unknown>): Record<string, unknown> {
  const capabilities = result.capabilities as { tools?: unknown } | undefined;
  if (capabilities === null || typeof capabilities !== 'object' || capabilities.tools === null || typeof capabilities.tools !== 'object') return result;
  return { ...result, capabilities: { ...capabilities, tools: { ...capabilities.tools, listChanged: true } } };
}
