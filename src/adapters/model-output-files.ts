/**
 * What a post check reads of a tool's model output (the AI SDK's `toModelOutput`): content
 * parts that carry a file as bytes (`file-data`, `image-data`, `media`: base64 or raw) are
 * read with the file's text beside them. A provider hands the model a text file's text (a
 * document), so a control must read that text, not the base64 it travels as.
 */
import { textOfBytes } from './bytes-text.js';

/** The output's value, each file part that decodes as text given a `text` of it. */
export function withFileTexts(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((part: unknown) => {
    if (typeof part !== 'object' || part === null || !('data' in part)) return part;
    const { data, mediaType } = part as { data: unknown; mediaType?: unknown };
    const text = textOfFile(data, typeof mediaType === 'string' ? mediaType : '');
    return text === undefined ? part : { ...part, text };
  });
}

/** The file's texts (bytes-text.ts: by the charset its media type names and by what the bytes look like); undefined for bytes that are no text (an image). */
function textOfFile(data: unknown, mediaType: string): string | undefined {
  const bytes = bytesOf(data);
  return bytes === undefined ? undefined : (textOfBytes(bytes, mediaType) ?? undefined);
}

function bytesOf(data: unknown): Uint8Array | undefined {
  if (typeof data === 'string') return Buffer.from(data, 'base64');
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return undefined;
}
