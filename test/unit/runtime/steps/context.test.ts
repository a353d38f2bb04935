import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../../src/errors/index.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { Failures } from '../../../../src/runtime/steps/context.js';

describe('Failures', () => {
  it('keeps a membership refused while the start still runs, for the runtime to stop with', () => {
    const failures = new Failures('orders', testMetrics(), silentLogger());

    failures.membershipLost(new Error('INCONSISTENT_GROUP_PROTOCOL'));

    expect(failures.signal.aborted).toBe(true);
    expect(failures.error?.code).toBe('KAFKA_GROUP_MEMBERSHIP_LOST');
    expect(failures.error?.message).toContain('orders-instances');
  });

  it('keeps the first error: a later one does not replace what stopped the connector', () => {
    const failures = new Failures('orders', testMetrics(), silentLogger());

    failures.fail(new FatalError('KAFKA_OFFSETS_TOPIC_REPARTITIONED', 'moved'));
    failures.fail(new FatalError('SINK_PROGRAMMER_ERROR', 'bug'));

    expect(failures.error?.code).toBe('KAFKA_OFFSETS_TOPIC_REPARTITIONED');
  });

  it('marks a fencing by a newer instance as standby, and nothing else', async () => {
    const fenced = testMetrics();
    new Failures('orders', fenced, silentLogger()).fail(
      new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer instance'),
    );
    const broken = testMetrics();
    new Failures('orders', broken, silentLogger()).fail(new FatalError('SINK_PROGRAMMER_ERROR', 'bug'));

    expect((await fenced.standby.get()).values[0]?.value).toBe(1);
    expect((await broken.standby.get()).values[0]?.value ?? 0).toBe(0);
  });

  it('ends only the writer at a stand-down, and opens a new writer signal when a standby takes over', async () => {
    const metrics = testMetrics();
    const failures = new Failures('orders', metrics, silentLogger());
    const first = failures.signal;
    failures.fail(new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer instance'));
    expect(first.aborted).toBe(true);
    expect(failures.stopped.aborted).toBe(false);

    failures.tookOver();

    expect(failures.error).toBeNull();
    expect(failures.signal.aborted).toBe(false);
    expect((await metrics.standby.get()).values[0]?.value).toBe(0);
    failures.fail(new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer one again'));
    expect(failures.error?.message).toBe('a newer one again');
  });

  it('stands by again for the same stand-down when a takeover fails holding nothing', async () => {
    const metrics = testMetrics();
    const failures = new Failures('orders', metrics, silentLogger());
    failures.fail(new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer instance'));
    failures.tookOver();

    failures.takeoverFailed();

    expect(failures.error?.message).toBe('a newer instance');
    expect(failures.signal.aborted).toBe(true);
    expect((await metrics.standby.get()).values[0]?.value).toBe(1);
  });

  it('stops the connector for a fatal error reported while standing by, and refuses a takeover after it', () => {
    const failures = new Failures('orders', testMetrics(), silentLogger());
    failures.fail(new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'a newer instance'));

    failures.membershipLost(new Error('the group consumer crashed'));

    expect(failures.stopped.aborted).toBe(true);
    expect(failures.error?.code).toBe('KAFKA_GROUP_MEMBERSHIP_LOST');
    expect(() => failures.tookOver()).toThrow();
  });
});
