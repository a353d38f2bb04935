import { describe, expect, it } from 'vitest';
import { HoldNotices } from '../../../../src/api/rate-limit/hold-notices.js';
import { capturingLogger } from '../../../support/logger.js';

describe('HoldNotices', () => {
  it('warns once per scope and header of a wait that makes no sense, naming the header and its value', () => {
    const log = capturingLogger();
    const notices = new HoldNotices(log.logger, 300_000);
    const nonsense = { header: 'x-ratelimit-reset', kind: 'implausible', raw: '1717000000000' } as const;
    notices.acted('grant-a', nonsense);
    notices.acted('grant-a', nonsense);
    notices.acted('grant-a', { ...nonsense, header: 'retry-after', raw: 'later' });
    notices.acted('grant-b', nonsense);
    const warnings = log.lines().filter((line) => line.level === 40);
    expect(warnings.map((w) => [w.scope, w.header, w.value])).toEqual([
      ['grant-a', 'x-ratelimit-reset', '1717000000000'],
      ['grant-a', 'retry-after', 'later'],
      ['grant-b', 'x-ratelimit-reset', '1717000000000'],
    ]);
    expect(String(warnings[0]?.msg)).toContain('backing off instead');
  });

  it('says once per scope and header that a wait beyond maxRetryAfterMs is capped, and nothing of one within it', () => {
    const log = capturingLogger();
    const notices = new HoldNotices(log.logger, 300_000);
    notices.acted('g', { header: 'retry-after', kind: 'hold', holdMs: 300_000, form: 'delta-seconds' });
    expect(log.lines()).toEqual([]);
    notices.acted('g', { header: 'retry-after', kind: 'hold', holdMs: 3_600_000, form: 'http-date' });
    notices.acted('g', { header: 'retry-after', kind: 'hold', holdMs: 7_200_000, form: 'http-date' });
    expect(log.lines()).toMatchObject([
      { level: 30, scope: 'g', header: 'retry-after', form: 'http-date', askedSeconds: 3_600 },
    ]);
  });

  it('quotes a bounded, scrubbed value, never a credential an API might echo', () => {
    const log = capturingLogger();
    const notices = new HoldNotices(log.logger, 300_000);
    notices.acted('g', {
      header: 'retry-after',
      kind: 'implausible',
      raw: `Bearer abcdefghijklmnop ${'x'.repeat(500)}`,
    });
    expect(log.text()).not.toContain('abcdefghijklmnop');
    expect(String(log.lines()[0]?.value).length).toBeLessThanOrEqual(100);
  });
});
