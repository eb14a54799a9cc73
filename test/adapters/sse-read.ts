/** Reading SSE responses in the HTTP face's tests. */

/**
 * Reads an SSE response until an item parsed from its whole events matches `until`, then
 * drops the connection (as a client going away, or a network failure, would).
 */
export async function readUntil<T>(response: Response, parse: (text: string) => T[], until: (item: T) => boolean): Promise<T[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before the awaited event: ${text}`);
    text += value;
    const seen = parse(text.slice(0, text.lastIndexOf('\n\n') + 2));
    if (seen.some(until)) {
      await reader.cancel();
      return seen;
    }
  }
}

/** One SSE event as the face sends it: its id, and its data parsed as a JSON-RPC message. */
export interface SseEvent {
  id: string | undefined;
  message: Record<string, unknown> | undefined;
}

/** The whole events of an SSE body (comments and blank blocks skipped). */
export function parseSse(text: string): SseEvent[] {
  return text.split('\n\n').filter((block) => block.trim() !== '' && !block.startsWith(':')).map((block) => {
    const id = /^id: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.+)$/m.exec(block)?.[1];
    return { id, message: data === undefined ? undefined : (JSON.parse(data) as Record<string, unknown>) };
  });
}
