import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/logging/logger.js';
import { gracefulStop } from '../../../../src/sync/scheduler/graceful-stop.js';

const watch = (signal: AbortSignal, hardStop = new AbortController()) => {
  let stops = 0;
  const stopping = gracefulStop({
    signal,
    shutdownTimeoutMs: 60_000,
    hardStop,
    logger: silentLogger(),
    onStop: () => stops++,
  });
  return { stopping, hardStop, stops: () => stops };
};

describe('gracefulStop', () => {
  it('begins the stop at once when the signal aborted already', () => {
    const { stopping, stops } = watch(AbortSignal.abort());
    expect(stops()).toBe(1);
    stopping.dispose();
  });

  it('begins the stop when the signal aborts, and not after dispose', () => {
    const first = new AbortController();
    const watched = watch(first.signal);
    expect(watched.stops()).toBe(0);
    first.abort();
    expect(watched.stops()).toBe(1);
    watched.stopping.dispose();

    const second = new AbortController();
    const disposed = watch(second.signal);
    disposed.stopping.dispose();
    second.abort();
    expect(disposed.stops()).toBe(0);
  });

  it('says the pages in flight are abandoned once the hard stop aborts', async () => {
    const { stopping, hardStop } = watch(new AbortController().signal);
    let abandoned = false;
    void stopping.abandoned.then(() => (abandoned = true));
    await Promise.resolve();
    expect(abandoned).toBe(false);
    hardStop.abort();
    await expect(stopping.abandoned).resolves.toBe('abandoned');
    stopping.dispose();
  });
});
