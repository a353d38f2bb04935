/**
 * Which partitions' signals this instance may answer and carry out now: those it owns AND whose signals it has
 * read up to the signals topic's end as of the moment it came to own them. Pure state over plain data; its driver
 * (signal-catch-up.ts) feeds it what is owned, the end offsets it read and the reader's positions.
 *
 * Why: the previous owner of a partition (distributed mode's handover, or the writer a standby replaces) wrote
 * outcomes up to the moment it lost it, and this instance's signal reader may not have read them yet. The
 * location's offset names only the LAST signal carried out there (sync/location/signal-steps-rule.ts), so a signal
 * the previous owner finished before a later one (a backfill `done`, then a reset) would be handed to the
 * location again as still `accepted`, and carried out twice; and a signal the previous owner answered, read here
 * without its outcome, would be accepted a second time, that `accepted` written after its `done`. A partition newly
 * owned is therefore held until the reader's position there reaches the end read after the ownership change
 * (the previous owner is fenced by then: its transactions are committed or aborted below that end).
 *
 * Contract: `owned` with every partition owned now, at each change of ownership (a loss included) and whenever
 * it may have changed; `endsToRead` then gives the partitions whose ends are to be read, `endsRead` takes what was
 * read for them (ignored for a partition lost, or lost and owned again, meanwhile), and `reached` releases the
 * partitions the reader's positions have reached. `answers(partition)` is the answerer's gate.
 */

/** A partition owned and not caught up yet: the end to reach, null until read. One object per ownership. */
interface Waiting {
  end: bigint | null;
}

/** The ends to read: the partitions waiting for one, each as it waits (a later ownership is another object). */
export interface EndsRequest {
  readonly partitions: ReadonlyMap<number, Waiting>;
}

export class HandoverCatchUp {
  /** Owned and caught up since they became owned: answered. */
  private readonly caughtUp = new Set<number>();
  /** Owned and not caught up yet. */
  private readonly waiting = new Map<number, Waiting>();

  /** Every partition owned now: the others are lost; one not owned before waits for the reader. */
  owned(partitions: Iterable<number>): void {
    const now = new Set(partitions);
    for (const partition of [...this.caughtUp]) if (!now.has(partition)) this.caughtUp.delete(partition);
    for (const partition of [...this.waiting.keys()]) if (!now.has(partition)) this.waiting.delete(partition);
    for (const partition of now)
      if (!this.caughtUp.has(partition) && !this.waiting.has(partition))
        this.waiting.set(partition, { end: null });
  }

  /** The partitions whose ends are to be read now (owned since the last read); null when none. */
  endsToRead(): EndsRequest | null {
    const partitions = new Map([...this.waiting].filter(([, waiting]) => waiting.end === null));
    return partitions.size === 0 ? null : { partitions };
  }

  /**
   * The read_committed ends read, after `request` was made, of the topic's partitions. A partition the read does
   * not list has no end to reach (0: nothing was written there).
   */
  endsRead(request: EndsRequest, ends: ReadonlyMap<number, bigint>): void {
    for (const [partition, waiting] of request.partitions)
      if (this.waiting.get(partition) === waiting) waiting.end = ends.get(partition) ?? 0n;
  }

  /** Releases the partitions whose end the reader's `position` has reached; returns them. */
  reached(position: (partition: number) => bigint): number[] {
    const released: number[] = [];
    for (const [partition, { end }] of this.waiting) {
      if (end === null || position(partition) < end) continue;
      this.waiting.delete(partition);
      this.caughtUp.add(partition);
      released.push(partition);
    }
    return released;
  }

  /** Whether the signals of `partition` may be answered and carried out: owned, and caught up since. */
  answers(partition: number): boolean {
    return this.caughtUp.has(partition);
  }
}
