/**
 * The catch-up of the signals channel after each handover (handover-catch-up.ts holds its state): told when what
 * this instance owns may have changed (`observe`: at each ownership change, each entry read, and when the channel
 * opens) and when the reader's position moved (`moved`), it reads the signals topic's end offsets for the
 * partitions newly owned and says, through `released`, when some partitions' signals may be answered again.
 * `answers(partition)` is the gate the answerer and the locations' signal queue read. Wired by signal-service.ts.
 */
import type { Logger } from '../../logging/logger.js';
import { retrying, type Backoff } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { HandoverCatchUp } from './handover-catch-up.js';

/** What the catch-up reads of the signals topic reader (kafka/signals/signal-reader.ts). */
export interface CatchUpReader {
  position(partition: number): bigint;
  endOffsets(): Promise<Map<number, bigint>>;
}

export interface SignalCatchUpOptions {
  topic: string;
  /** Whether this instance owns (and writes for) the partition now. */
  ownsPartition: (partition: number) => boolean;
  /** The topic's partition count; undefined until the channel's writer knows it. */
  partitionCount: () => number | undefined;
  /** The reader whose first read is done; null before. */
  reader: () => CatchUpReader | null;
  /** Some partitions' signals may be answered now: answer what waited. */
  released: () => void;
  /** Between failed reads of the end offsets (tried again until `close`). */
  backoff: Backoff;
  clock: Clock;
  logger: Logger;
}

export class SignalCatchUp {
  private readonly state = new HandoverCatchUp();
  /** The reads of end offsets under way; null when none is (one at a time: it reads what waits when it is done). */
  private reading: Promise<void> | null = null;
  private readonly closing = new AbortController();

  constructor(private readonly options: SignalCatchUpOptions) {}

  /** Whether the signals of `partition` may be answered and carried out now: owned, and caught up since. */
  answers(partition: number): boolean {
    return this.options.ownsPartition(partition) && this.state.answers(partition);
  }

  /**
   * Takes what is owned now (nothing until the channel is open: positions mean something once a first read is
   * done) and reads the end offsets the partitions newly owned wait for. Resolves once none waits for a read.
   */
  observe(): Promise<void> {
    const count = this.options.partitionCount();
    if (count === undefined || this.options.reader() === null) return Promise.resolve();
    const owned: number[] = [];
    for (let partition = 0; partition < count; partition++)
      if (this.options.ownsPartition(partition)) owned.push(partition);
    this.state.owned(owned);
    return this.readEnds();
  }

  /** The reader's position moved on: releases the partitions it has now read up to their end as of their handover. */
  moved(): void {
    const reader = this.options.reader();
    if (reader === null) return;
    const released = this.state.reached((partition) => reader.position(partition));
    if (released.length === 0) return;
    this.options.logger.info(
      { topic: this.options.topic, partitions: released },
      'signals of partitions taken over read up to the handover',
    );
    this.options.released();
  }

  /** Ends the reads of end offsets and their waits. */
  close(): void {
    this.closing.abort();
  }

  private readEnds(): Promise<void> {
    this.reading ??= this.readAllEnds().then(() => {
      this.reading = null;
      // Owned while the last read was ending (it had looked for more already): read for it now.
      if (this.state.endsToRead() !== null && !this.closing.signal.aborted) return this.readEnds();
    });
    return this.reading;
  }

  /** Reads the end offsets the partitions newly owned wait for, until none waits for one, and releases those reached. */
  private async readAllEnds(): Promise<void> {
    const { topic, backoff, clock, logger } = this.options;
    const { signal } = this.closing;
    try {
      for (let request = this.state.endsToRead(); request !== null; request = this.state.endsToRead()) {
        const reader = this.options.reader();
        if (reader === null || signal.aborted) return;
        const ends = await retrying(
          { ...backoff, maxAttempts: Number.POSITIVE_INFINITY },
          {
            clock,
            signal,
            retriable: () => true,
            onRetry: ({ error, waitMs }) =>
              logger.warn(
                { err: error, topic, retryInMs: waitMs },
                'signals topic end offsets not read: the signals of the partitions taken over wait',
              ),
          },
          () => reader.endOffsets(),
        );
        this.state.endsRead(request, ends);
        this.moved();
      }
    } catch (error) {
      if (!signal.aborted) logger.error({ err: error, topic }, 'signals topic end offsets not read');
    }
  }
}
