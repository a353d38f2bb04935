import { describe, expect, it } from 'vitest';
import { assignmentCheck } from '../../../src/ops/checks.js';

describe('assignmentCheck', () => {
  it('fails until the instance received an assignment from the instances group', async () => {
    expect(await assignmentCheck(() => null).check()).toMatchObject({ name: 'assignment', ok: false });
  });

  it('passes with partitions assigned, and with none (more instances than partitions: a standby)', async () => {
    expect(await assignmentCheck(() => ({ partitions: [1, 2], generationId: 4 })).check()).toEqual({
      name: 'assignment',
      ok: true,
      detail: '2 partition(s) of the offsets topic',
    });
    const empty = await assignmentCheck(() => ({ partitions: [], generationId: 4 })).check();
    expect(empty).toMatchObject({ ok: true });
    expect(empty.detail).toContain('standing by');
  });
});
