/**
 * fetch for the MCP SDK's streamable-HTTP client transport, with a signal of its own per
 * request that follows the transport's. The benchmark's MCP client uses it (the gateway's
 * own upstream client, src/adapters/mcp-http-upstream.ts, does not use fetch).
 *
 * The transport passes one AbortSignal (its own, aborted by close) to every request.
 * Node 20's fetch adds an abort listener to that signal per request and removes it only
 * when the request is garbage-collected, so a busy session keeps thousands on it: each
 * new one walks the list, and past 1,500 each prints a MaxListenersExceededWarning (a
 * stack trace on stderr per call). Here the shared signal holds one listener; it aborts
 * every request still in flight. (`AbortSignal.any` would do it, but in Node 20 it keeps
 * every signal it made: 120 MB per 100,000 requests.)
 */

/** Per-request controllers, held weakly: a finished request's controller is left to the collector. */
interface Followers {
  refs: Set<WeakRef<AbortController>>;
  /** Dead references are pruned when the set reaches this size, which then doubles from what is left. */
  pruneAt: number;
}

const MIN_PRUNE_AT = 256;

export function fetchWithOwnSignals(base: typeof fetch = (input, init) => fetch(input, init)): typeof fetch {
  const followersOf = new WeakMap<AbortSignal, Followers>();
  // A request's signal keeps its controller alive for as long as fetch holds the signal.
  const controllerOf = new WeakMap<AbortSignal, AbortController>();
  return (input, init) => {
    const shared = init?.signal;
    if (!shared) return base(input, init);
    const own = new AbortController();
    controllerOf.set(own.signal, own);
    if (shared.aborted) own.abort(shared.reason);
    else follow(shared, own);
    return base(input, { ...init, signal: own.signal });
  };

  function follow(shared: AbortSignal, own: AbortController): void {
    let followers = followersOf.get(shared);
    if (!followers) {
      const created: Followers = { refs: new Set(), pruneAt: MIN_PRUNE_AT };
      followersOf.set(shared, created);
      shared.addEventListener('abort', () => {
        for (const ref of created.refs) ref.deref()?.abort(shared.reason);
        created.refs.clear();
      }, { once: true });
      followers = created;
    }
    if (followers.refs.size >= followers.pruneAt) {
      for (const ref of followers.refs) if (ref.deref() === undefined) followers.refs.delete(ref);
      followers.pruneAt = Math.max(MIN_PRUNE_AT, followers.refs.size * 2);
    }
    followers.refs.add(new WeakRef(own));
  }
}
