import { describe, expect, it } from 'vitest';
import { Lifecycle, SLOW_CLOSE_MS } from '../../../src/runtime/lifecycle.js';
import { ManualClock } from '../../support/clock.js';

function recordingLogger() {
  const warnings: Array<{ details: object; message: string }> = [];
  return {
    warnings,
    logger: { warn: (details: object, message: string) => warnings.push({ details, message }) },
  };
}

describe('Lifecycle', () => {
  it('undoes what was opened in reverse order of registration', async () => {
    const { logger } = recordingLogger();
    const lifecycle = new Lifecycle(logger);
    const closed: string[] = [];
    for (const name of ['metrics server', 'kafka session', 'instances group', 'heartbeats'])
      lifecycle.defer(name, () => {
        closed.push(name);
      });

    await lifecycle.close();

    expect(closed).toEqual(['heartbeats', 'instances group', 'kafka session', 'metrics server']);
  });

  it('goes on closing the rest when one cleanup fails, and names the one that failed in a warning', async () => {
    const { logger, warnings } = recordingLogger();
    const lifecycle = new Lifecycle(logger);
    const closed: string[] = [];
    lifecycle.defer('first', () => {
      closed.push('first');
    });
    lifecycle.defer('broken', () => Promise.reject(new Error('disconnect failed')));
    lifecycle.defer('last', () => {
      closed.push('last');
    });

    await lifecycle.close();

    expect(closed).toEqual(['last', 'first']);
    expect(warnings).toEqual([
      {
        details: { err: new Error('disconnect failed'), component: 'broken' },
        message: 'error while closing',
      },
    ]);
  });

  it('closes each resource once when closed twice (a failed run, then shutdown)', async () => {
    const { logger } = recordingLogger();
    const lifecycle = new Lifecycle(logger);
    let closes = 0;
    lifecycle.defer('sink', async () => {
      await Promise.resolve();
      closes += 1;
    });

    await Promise.all([lifecycle.close(), lifecycle.close()]);
    await lifecycle.close();

    expect(closes).toBe(1);
  });

  it('refuses a registration once closing began, so nothing opened late is left open unnoticed', async () => {
    const { logger } = recordingLogger();
    const lifecycle = new Lifecycle(logger);
    await lifecycle.close();

    expect(() => lifecycle.defer('late', () => undefined)).toThrow(/lifecycle is closing/);
  });

  it('names a cleanup that held the stop for SLOW_CLOSE_MS or longer, with its time, and no quicker one', async () => {
    const { logger, warnings } = recordingLogger();
    const clock = new ManualClock(1_000);
    const lifecycle = new Lifecycle(logger, clock);
    lifecycle.defer('kafka session', () => clock.advance(SLOW_CLOSE_MS + 250));
    lifecycle.defer('heartbeats', () => clock.advance(SLOW_CLOSE_MS - 1));

    await lifecycle.close();

    expect(warnings).toEqual([
      {
        details: { component: 'kafka session', tookMs: SLOW_CLOSE_MS + 250 },
        message: 'slow to close: it held the stop this long',
      },
    ]);
  });
});
