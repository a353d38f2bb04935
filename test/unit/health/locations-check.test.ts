import { describe, expect, it } from 'vitest';
import { locationsCheck } from '../../../src/health/checks.js';

const located = (...stoppedBy: Array<string | null>) => stoppedBy.map((code) => ({ stoppedBy: code }));

describe('locationsCheck', () => {
  it('stays ready while some locations work, and counts the stopped ones by code', async () => {
    const result = await locationsCheck(() =>
      located(null, 'API_FORBIDDEN', 'API_FORBIDDEN', 'CURSOR_LOOP'),
    ).check();
    expect(result).toEqual({
      name: 'locations',
      ok: true,
      detail: '3 of 4 location(s) stopped: API_FORBIDDEN x2, CURSOR_LOOP x1',
    });
  });

  it('is not ready when every location is stopped', async () => {
    const result = await locationsCheck(() => located('AUTH_GRANT_REVOKED')).check();
    expect(result).toMatchObject({ ok: false, detail: '1 of 1 location(s) stopped: AUTH_GRANT_REVOKED x1' });
  });

  it('says none is stopped when all work', async () => {
    expect(await locationsCheck(() => located(null, null)).check()).toMatchObject({
      ok: true,
      detail: '2 location(s), none stopped',
    });
  });
});
