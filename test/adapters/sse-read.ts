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
