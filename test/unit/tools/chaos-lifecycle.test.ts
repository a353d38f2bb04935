import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../../../tools/chaos/lifecycle.js';

describe("the chaos run's lifecycle stack", () => {
  it('stops what was started last first, each even when another failed, and then rejects', async () => {
    const lifecycle = new Lifecycle();
    const stopped: string[] = [];
    lifecycle.defer(async () => void stopped.push('stack'));
    lifecycle.defer(async () => {
      stopped.push('sandbox');
      throw new Error('sandbox would not stop');
    });
    lifecycle.defer(async () => void stopped.push('connectors'));
    expect(lifecycle.closing).toBe(false);
    await expect(lifecycle.close()).rejects.toThrow('sandbox would not stop');
    expect(stopped).toEqual(['connectors', 'sandbox', 'stack']);
    expect(lifecycle.closing).toBe(true);
  });

  it('stops everything once when both the run and Ctrl-C ask', async () => {
    const lifecycle = new Lifecycle();
    let stops = 0;
    lifecycle.defer(async () => void stops++);
    await Promise.all([lifecycle.close(), lifecycle.close()]);
    expect(stops).toBe(1);
  });
});
