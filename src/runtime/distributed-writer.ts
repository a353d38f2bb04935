/**
 * Distributed mode's writer: one for good. The instances group's assignments move its partitions in and out
 * (partition-handover.ts), never the writer itself, and nothing takes over here: a writer stood down by a
 * newer instance with the same connector.name stands by until stopped (not ready: `/readyz` fails), writing
 * nothing, so that a restart loop cannot fence the newer instance back.
 */
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { Clock } from '../time/clock.js';
import {
  RoleRecord,
  runToEnd,
  untilAborted,
  type InstanceWriter,
  type RoleStatus,
  type Writer,
} from './instance-writer.js';
import type { Failures } from './steps/context.js';

export interface DistributedWriterOptions {
  writer: Writer;
  failures: Failures;
  metrics: Pick<ConnectorMetrics, 'instanceWriter'>;
  logger: Logger;
  clock: Clock;
}

export class DistributedWriter implements InstanceWriter {
  private readonly role: RoleRecord;

  constructor(private readonly options: DistributedWriterOptions) {
    this.role = new RoleRecord(options.failures, options.metrics, options.clock);
  }

  status(): RoleStatus {
    return this.role.status();
  }

  locations(): ReturnType<Writer['status']> {
    return this.options.writer.status();
  }

  waitReasons(): ReturnType<Writer['waitReasons']> {
    return this.options.writer.waitReasons();
  }

  nudge(locationUid: string): ReturnType<Writer['nudge']> {
    return this.role.now() === 'writer' ? this.options.writer.nudge(locationUid) : 'unknown';
  }

  async run(signal: AbortSignal): Promise<void> {
    const { writer, failures, logger } = this.options;
    const standDown = await runToEnd(writer, signal, failures);
    if (standDown === null) return;
    this.role.set('standby');
    if (signal.aborted) return;
    await writer.close();
    logger.warn(
      { code: standDown.code },
      'fenced by a newer instance with the same connector.name: standing by (not ready) until stopped',
    );
    await untilAborted(signal);
  }

  close(): Promise<void> {
    return this.options.writer.close();
  }
}
