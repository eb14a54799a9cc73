/**
 * The prompts the MCP server declared (`prompts/list`, read by the gateway itself:
 * mcp-declared.ts). A prompts/get is relayed only when its name is one of them exactly,
 * and its arguments are named as the prompt declares them: a server that looks prompts or
 * arguments up loosely (case, width, whitespace, invisible characters), as some look tools
 * up, would give `ADMIN_BRIEF` for a control scoped to `admin_brief`, or read `ROLE` as the
 * `role` a control checks.
 */
import { DeclaredList, type ListPage } from './mcp-declared.js';
import { shown } from './mcp-text.js';
import { misnamedArgument } from './mcp-tools.js';

export class UpstreamPrompts {
  readonly #list: DeclaredList;

  constructor(listPage: ListPage) {
    this.#list = new DeclaredList(listPage, 'prompts');
  }

  /** Why a prompts/get of `name` with `args` is refused, or null. */
  async refusalOf(name: string, args: unknown): Promise<{ report: string; text: string } | null> {
    const { names: declared, declared: declarations } = await this.#list.read();
    if (!declared.has(name)) {
      return { report: 'not a prompt the MCP server declared', text: `prompt ${shown(name)} is not one the MCP server declared (prompt names are compared exactly)` };
    }
    // A prompt declares its arguments by name: as an object schema's properties, they are what misnamedArgument compares with.
    const declaredArguments = (declarations.get(name) as { arguments?: unknown } | null)?.arguments;
    const names = Array.isArray(declaredArguments) ? declaredArguments.flatMap((a) => (typeof (a as { name?: unknown } | null)?.name === 'string' ? [(a as { name: string }).name] : [])) : [];
    const misnamed = misnamedArgument({ inputSchema: { properties: Object.fromEntries(names.map((n) => [n, {}])) } }, args);
    if (misnamed === null) return null;
    const [key, argument] = misnamed.map(shown);
    return {
      report: `its argument ${key} is not the declared argument ${argument}, which a lenient server would read it as`,
      text: `argument ${key} is not an argument of prompt ${shown(name)}: write ${argument}, exactly (argument names are compared exactly)`,
    };
  }

  /** The server's list changed: read it again before the next prompts/get. */
  invalidate(): void {
    this.#list.invalidate();
  }
}
