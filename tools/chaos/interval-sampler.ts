/**
 * The connector's effective poll interval over the run, as its own gauge reports it
 * (`calls_connector_poll_effective_interval_seconds`, the largest among the running instances), sampled every
 * second while the faults run, so that each fault's freshness is judged against the interval the connector said
 * it polled at then (freshness.ts fairIntervalMs).
 */
import type { Fleet } from './instances.js';
import { sleep } from './processes.js';

const GAUGE = 'calls_connector_poll_effective_interval_seconds';

/** The largest effective interval (seconds) among the running instances; null when none answered. */
export async function effectiveIntervalSeconds(
  fleet: Pick<Fleet, 'currentRunning' | 'metricsPort'>,
): Promise<number | null> {
  const values = await Promise.all(
    fleet.currentRunning().map(async (instance) => {
      try {
        const response = await fetch(`http://127.0.0.1:${fleet.metricsPort(instance)}/metrics`, {
          signal: AbortSignal.timeout(2000),
        });
        const line = (await response.text()).split('\n').find((l) => l.startsWith(`${GAUGE} `));
        return line === undefined ? null : Number(line.split(' ')[1]);
      } catch {
        return null;
      }
    }),
  );
  const read = values.filter((v): v is number => v !== null && Number.isFinite(v));
  return read.length === 0 ? null : Math.max(...read);
}

export class IntervalSampler {
  private readonly samples: { atMs: number; ms: number }[] = [];

  constructor(private readonly fleet: Pick<Fleet, 'currentRunning' | 'metricsPort'>) {}

  /** Samples every second until `stopped()`. */
  async loop(stopped: () => boolean): Promise<void> {
    while (!stopped()) {
      const seconds = await effectiveIntervalSeconds(this.fleet);
      if (seconds !== null) this.samples.push({ atMs: Date.now(), ms: seconds * 1000 });
      await sleep(1000);
    }
  }

  /** The largest interval (ms) sampled from `fromMs` to `untilMs`; null when none was. */
  maxBetween(fromMs: number, untilMs: number): number | null {
    let max: number | null = null;
    for (const s of this.samples) if (s.atMs >= fromMs && s.atMs <= untilMs) max = Math.max(max ?? 0, s.ms);
    return max;
  }
}
