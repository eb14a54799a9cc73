/**
 * PURE. One key's counter of a rate or budget control, as the stores persist it and stats
 * show it: the evaluators (evaluators/counting/) keep it, the stores (store/) write it, and
 * neither may import the other, so it lives here.
 */
export interface CounterRow {
  counter: string;
  control_id: number;
  key: string;
  kind: 'rate' | 'budget';
  window_ms: number;
  max: number;
  /** Bucket numbers, ascending, and their sums: the key's non-empty buckets. */
  idx: number[];
  val: number[];
  /** When the key goes idle (epoch ms); the row may be deleted after. */
  expires_at: number;
}
