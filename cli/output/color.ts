/** Colour only for people: a TTY and NO_COLOR unset (https://no-color.org). */
export interface Colors {
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

const wrap = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;
const identity = (text: string) => text;

export function colors(enabled: boolean): Colors {
  if (!enabled) return { red: identity, green: identity, yellow: identity, cyan: identity, dim: identity, bold: identity };
  return { red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39), cyan: wrap(36, 39), dim: wrap(2, 22), bold: wrap(1, 22) };
}

export function shouldColor(stream: { isTTY?: boolean }, env: Record<string, string | undefined> = process.env): boolean {
  // no-color.org: NO_COLOR set to anything but the empty string turns colour off.
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb';
}
