/**
 * Counters summed over the running instances' /metrics (one scrape each), for checks that judge what the
 * connector did rather than what it reached: how many request starts its rate limiters granted to history.
 */
import type { Fleet } from './instances.js';

/** The sum of `name`'s samples whose labels include every pair of `labels`, over the instances that answered. */
export async function fleetCounter(
  fleet: Pick<Fleet, 'currentRunning' | 'metricsPort'>,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): Promise<number> {
  const values = await Promise.all(
    fleet.currentRunning().map(async (instance) => {
      try {
        const response = await fetch(`http://127.0.0.1:${fleet.metricsPort(instance)}/metrics`, {
          signal: AbortSignal.timeout(2000),
        });
        return counterSum(await response.text(), name, labels);
      } catch {
        return 0;
      }
    }),
  );
  return values.reduce((sum, v) => sum + v, 0);
}

/** The sum of `name`'s samples in a Prometheus text exposition whose labels include every pair of `labels`. */
export function counterSum(text: string, name: string, labels: Readonly<Record<string, string>>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`))) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}
