import { createContext, useContext } from 'react';

/**
 * Whether the dashboard may colour text. NO_COLOR (or --no-color) turns colours off;
 * bold, dim and inverse stay, so the selected row and the pause banner still show.
 */
export const ColorContext = createContext(true);

/** `tint('red')` is 'red' with colours on, undefined (the terminal's own) with them off. */
export function useTint(): (color: string | undefined) => string | undefined {
  const on = useContext(ColorContext);
  return (color) => (on ? color : undefined);
}
