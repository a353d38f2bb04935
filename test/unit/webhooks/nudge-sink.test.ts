import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logging/logger.js';
import {
  loggingNudgeSink,
  refusedWhileStandingBy,
  relayedNudgeSink,
  type LocationNudge,
} from '../../../src/webhooks/nudge-sink.js';

describe("a single-mode standby's webhook sink", () => {
  const nudge = {
    uid: 'u1',
    event: 'call.updated',
    locations: ['l1'],
    resolution: 'payload_location',
  } as const;

  it('refuses deliveries while standing by (a retriable error: the receiver answers 503 with Retry-After) and hands them on while writing', async () => {
    const offered: string[] = [];
    let standingBy = true;
    const sink = refusedWhileStandingBy(
      {
        offer: (taken) => {
          offered.push(taken.uid);
          return Promise.resolve();
        },
      },
      () => standingBy,
    );
    await expect(sink.offer(nudge)).rejects.toMatchObject({
      code: 'WEBHOOK_STANDING_BY',
      disposition: 'retriable',
    });
    expect(offered).toEqual([]);
    standingBy = false;
    await sink.offer(nudge);
    expect(offered).toEqual(['u1']);
  });
});

describe('the nudge topic sink (distributed mode)', () => {
  it('writes one record per location of the nudge, and resolves once the write did', async () => {
    const written: LocationNudge[][] = [];
    const sink = relayedNudgeSink({
      write: (nudges) => {
        written.push([...nudges]);
        return Promise.resolve();
      },
    });
    await sink.offer({
      uid: 'u1',
      event: 'call.updated',
      locations: ['l1', 'l2'],
      resolution: 'grant_fanout',
    });
    expect(written).toEqual([
      [
        { location: 'l1', uid: 'u1', event: 'call.updated' },
        { location: 'l2', uid: 'u1', event: 'call.updated' },
      ],
    ]);
  });

  it('writes the delivery’s replay key with its nudges, for every instance’s replay window', async () => {
    const written: unknown[] = [];
    const sink = relayedNudgeSink({
      write: (_nudges, replay) => {
        written.push(replay);
        return Promise.resolve();
      },
    });
    const replay = { key: 'id:msg_1', atMs: 1_000 };
    await sink.offer(
      { uid: 'u1', event: 'call.updated', locations: ['l1'], resolution: 'payload_location' },
      replay,
    );
    expect(written).toEqual([replay]);
  });

  it('rejects when the write fails, so the delivery is answered 503 and retried', async () => {
    const sink = relayedNudgeSink({ write: () => Promise.reject(new Error('broker down')) });
    await expect(
      sink.offer({ uid: 'u1', event: 'call.updated', locations: ['l1'], resolution: 'payload_location' }),
    ).rejects.toThrow('broker down');
  });
});

describe('the logging sink (a receiver with no scheduler)', () => {
  it('takes every nudge at once', async () => {
    await expect(
      loggingNudgeSink(silentLogger()).offer({
        uid: 'u1',
        event: 'call.updated',
        locations: ['l1'],
        resolution: 'payload_location',
      }),
    ).resolves.toBeUndefined();
  });
});
