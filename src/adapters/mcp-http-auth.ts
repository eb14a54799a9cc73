/**
 * Clients of the gateway's HTTP face may prove who they are with a key of the guard
 * server (a regular or admin key): the gateway asks the guard server whether it accepts
 * the key, and remembers the answer for a minute so that a busy client costs one check a
 * minute, not one per request.
 */
const REMEMBER_MS = 60_000;
const MAX_REMEMBERED = 10_000;

export function guardKeyVerifier(serverUrl: string, fetchFn: typeof fetch = fetch): (key: string) => Promise<boolean> {
  const remembered = new Map<string, { ok: boolean; until: number }>();
  return async (key) => {
    const known = remembered.get(key);
    if (known && known.until > Date.now()) return known.ok;
    const response = await fetchFn(`${serverUrl}/api/v1/agents`, { headers: { 'x-api-key': key } });
    await response.body?.cancel();
    // 401 and 403 are answers; anything else (the server down) is no answer, and refuses this request only.
    if (response.status !== 401 && response.status !== 403 && !response.ok) throw new Error(`the guard server answered ${response.status}`);
    const ok = response.ok;
    if (remembered.size >= MAX_REMEMBERED) remembered.clear();
    remembered.set(key, { ok, until: Date.now() + REMEMBER_MS });
    return ok;
  };
}

/** A guard server that accepts requests without a key would accept any key: it cannot vouch for clients. */
export async function guardRequiresKeys(serverUrl: string, fetchFn: typeof fetch = fetch): Promise<boolean> {
  const response = await fetchFn(`${serverUrl}/api/v1/agents`);
  await response.body?.cancel();
  return response.status === 401;
}
