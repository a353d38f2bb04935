/** Reads prom-client counters in tests. */
import type { Counter } from 'prom-client';

/** Sum of a counter's series whose labels include `labels` (all series when empty); 0 when none. */
export async function counterValue(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))
    .reduce((sum, v) => sum + v.value, 0);
}
