import { describe, expect, it } from 'vitest';
import { runningCheck, type RunningState } from '../../../src/ops/checks.js';

const fenced = { code: 'KAFKA_FENCED_BY_ANOTHER_INSTANCE', message: 'a newer instance took over' };
const fatal = { code: 'CONFIG_INVALID', message: 'bad' };
const check = (state: RunningState) => runningCheck(() => state).check();

describe('runningCheck', () => {
  it('passes while this instance writes', async () => {
    expect(await check({ stopped: null, standDown: null, takesOver: true })).toEqual({
      name: 'running',
      ok: true,
      detail: 'writing',
    });
  });

  it('passes for a single-mode standby: it is up and takes over on its own, so a rollout completes with one', async () => {
    const result = await check({ stopped: null, standDown: fenced, takesOver: true });
    expect(result).toMatchObject({ name: 'running', ok: true });
    expect(result.detail).toContain('standing by (KAFKA_FENCED_BY_ANOTHER_INSTANCE)');
  });

  it('fails for an instance stood down for good (it can never take over) and after a fatal error', async () => {
    const stoodDown = await check({ stopped: null, standDown: fenced, takesOver: false });
    expect(stoodDown).toMatchObject({ name: 'running', ok: false });
    expect(stoodDown.detail).toContain('stood down for good');
    const stopped = await check({ stopped: fatal, standDown: null, takesOver: true });
    expect(stopped).toEqual({ name: 'running', ok: false, detail: 'stopped: CONFIG_INVALID: bad' });
  });
});
