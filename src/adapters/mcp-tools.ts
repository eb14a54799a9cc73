/**
 * The tools the MCP server declared (`tools/list`), as the gateway knows them. A
 * tools/call is relayed only when its name is one of them exactly: some servers match a
 * name loosely (case, width, whitespace, invisible characters), and a control scoped to
 * `run_sql` must not be escaped by calling `RUN_SQL` or `run_sql\u200b`.
 *
 * The list is read by the gateway itself (every page), when the first call needs it and
 * again after the server says it changed (`notifications/tools/list_changed`). The
 * client's own tools/list plays no part: a client may skip it or ask for one page.
 */

/** Reads one page of tools/list; rejects when the server answers with an error or not at all. */
export type ListPage = (cursor: string | undefined) => Promise<{ tools?: unknown; nextCursor?: unknown }>;

/** Enough for any real server; a server that pages forever is not waited for. */
const MAX_PAGES = 1000;

export class UpstreamTools {
  #names: ReadonlySet<string> | null = null;
  #loading: Promise<ReadonlySet<string>> | null = null;
  #generation = 0;

  constructor(private readonly listPage: ListPage) {}

  /** The declared names, read from the server when not known. */
  names(): Promise<ReadonlySet<string>> {
    if (this.#names) return Promise.resolve(this.#names);
    if (this.#loading) return this.#loading;
    const generation = this.#generation;
    const loading = this.#load().then((names) => {
      // A list that changed while it was read is read again by the next call.
      if (this.#generation === generation) this.#names = names;
      return names;
    }).finally(() => {
      if (this.#loading === loading) this.#loading = null;
    });
    this.#loading = loading;
    return loading;
  }

  /** The server's list changed: read it again before the next call. */
  invalidate(): void {
    this.#generation++;
    this.#names = null;
    this.#loading = null;
  }

  async #load(): Promise<ReadonlySet<string>> {
    const names = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.listPage(cursor);
      if (!Array.isArray(result.tools)) throw new Error('the MCP server answered tools/list without a list of tools');
      for (const tool of result.tools as unknown[]) {
        const name = (tool as { name?: unknown } | null)?.name;
        if (typeof name === 'string') names.add(name);
      }
      if (typeof result.nextCursor !== 'string' || result.nextCursor === '') return names;
      cursor = result.nextCursor;
    }
    throw new Error(`the MCP server's tools/list has more than ${MAX_PAGES} pages`);
  }
}
