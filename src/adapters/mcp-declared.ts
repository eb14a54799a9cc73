/**
 * A list the MCP server declares (`tools/list`, `prompts/list`), as the gateway reads it
 * itself: every page, when the first request needs it, and again after the server says it
 * changed (`notifications/tools/list_changed`, `.../prompts/list_changed`). The client's own
 * list requests play no part: a client may skip them or ask for one page.
 */

/** Reads one page of the list; rejects when the server answers with an error or not at all. */
export type ListPage = (cursor: string | undefined) => Promise<Record<string, unknown>>;

/** Enough for any real server; a server that pages forever is not waited for. */
const MAX_PAGES = 1000;

/** One full read of the list: its names, and each name's declaration (the last of that name). */
export interface DeclaredRead {
  names: ReadonlySet<string>;
  declared: ReadonlyMap<string, unknown>;
}

export class DeclaredList {
  #read: DeclaredRead | null = null;
  #loading: Promise<DeclaredRead> | null = null;
  #generation = 0;

  /** `key`: the list's field in each page (`tools`, `prompts`). */
  constructor(
    private readonly listPage: ListPage,
    private readonly key: 'tools' | 'prompts',
  ) {}

  /** The declared names, read from the server when not known. */
  async names(): Promise<ReadonlySet<string>> {
    return (await this.read()).names;
  }

  /**
   * The names and declarations of one read, read from the server when not known. Both come
   * from the same read: a read the list changed during may end after the read that followed it.
   */
  read(): Promise<DeclaredRead> {
    if (this.#read) return Promise.resolve(this.#read);
    if (this.#loading) return this.#loading;
    const generation = this.#generation;
    const loading = this.#load().then((read) => {
      // A list that changed while it was read is read again by the next request.
      if (this.#generation === generation) this.#read = read;
      return read;
    }).finally(() => {
      if (this.#loading === loading) this.#loading = null;
    });
    this.#loading = loading;
    return loading;
  }

  /** The last full read, when one is held (none is read for asking). */
  get held(): DeclaredRead | null {
    return this.#read;
  }

  /** The server's list changed: read it again before the next request. */
  invalidate(): void {
    this.#generation++;
    this.#read = null;
    this.#loading = null;
  }

  async #load(): Promise<DeclaredRead> {
    const names = new Set<string>();
    const declared = new Map<string, unknown>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.listPage(cursor);
      const entries = result[this.key];
      if (!Array.isArray(entries)) throw new Error(`the MCP server answered ${this.key}/list without a list of ${this.key}`);
      for (const entry of entries as unknown[]) {
        const name = (entry as { name?: unknown } | null)?.name;
        if (typeof name !== 'string') continue;
        names.add(name);
        declared.set(name, entry);
      }
      if (typeof result.nextCursor !== 'string' || result.nextCursor === '') return { names, declared };
      cursor = result.nextCursor;
    }
    throw new Error(`the MCP server's ${this.key}/list has more than ${MAX_PAGES} pages`);
  }
}
