import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { CommitDriver } from '../../../../src/sync/location/commit-driver.js';
import type { LocationOffset } from '../../../../src/sync/model.js';
import type { CommitOutcome, PageCommit, RecordSink } from '../../../../src/sync/ports.js';
import { ManualClock } from '../../../support/clock.js';

const offset = (cursor: string): LocationOffset => ({ since: null, cursor, watermark: null, boundary: [] });
const page: PageCommit = { locationUid: 'loc', calls: [], deadLetters: [], offset: offset('c2') };
const reason = new RetriableError('KAFKA_TRANSACTION_ABORTED', 'scripted');
const log = () => silentLogger();

/** A sink answering the scripted outcomes in turn, recording the pages it was given. */
function scripted(outcomes: (CommitOutcome | Error)[], generation = 0) {
  const seen: PageCommit[] = [];
  const sink: RecordSink = {
    commitPage: async (commit) => {
      seen.push(commit);
      const next = outcomes.shift();
      if (next === undefined) throw new Error('no outcome scripted');
      if (next instanceof Error) throw next;
      return next;
    },
    generation: () => generation,
    close: async () => undefined,
  };
  return { sink, seen };
}

function driver(sink: RecordSink, maxAttempts = 3, clock = new ManualClock()) {
  return new CommitDriver({ sink, retry: { ...DEFAULT_RETRY_POLICY, maxAttempts }, clock });
}

describe('CommitDriver', () => {
  it('returns stored, stamping the page with the sink generation it started under', async () => {
    const { sink, seen } = scripted([{ kind: 'stored' }], 4);
    expect(await driver(sink).commit(page, log)).toEqual({ kind: 'stored' });
    expect(seen.map((p) => p.generation)).toEqual([4]);
  });

  it('commits a rejected page again after a backoff on its clock, under the generation the rejection was read under', async () => {
    const clock = new ManualClock();
    const { sink, seen } = scripted([{ kind: 'rejected', reason, generation: 5 }, { kind: 'stored' }], 4);
    const result = driver(sink, 3, clock).commit(page, log);
    await clock.sleeping();
    expect(seen).toHaveLength(1);
    clock.advance(60_000);
    expect(await result).toEqual({ kind: 'stored' });
    expect(seen.map((p) => p.generation)).toEqual([4, 5]);
  });

  it("throws the rejection's reason once the retry policy is spent", async () => {
    const { sink, seen } = scripted([{ kind: 'rejected', reason }]);
    await expect(driver(sink, 1).commit(page, log)).rejects.toBe(reason);
    expect(seen).toHaveLength(1);
  });

  it('returns what another writer stored for a superseded page, and keeps its generation for the next pages', async () => {
    const theirs = offset('theirs');
    const { sink, seen } = scripted([
      { kind: 'superseded', stored: theirs, reason, generation: 2 },
      { kind: 'stored' },
    ]);
    const commits = driver(sink);
    expect(await commits.commit(page, log)).toEqual({ kind: 'superseded', stored: theirs });
    await commits.commit(page, log);
    expect(seen.map((p) => p.generation)).toEqual([0, 2]);
  });

  it('propagates a rejection of the promise (the sink writes nothing more) without retrying', async () => {
    const fatal = new FatalError('KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'stand by');
    const { sink, seen } = scripted([fatal]);
    await expect(driver(sink).commit(page, log)).rejects.toBe(fatal);
    expect(seen).toHaveLength(1);
  });

  it('ends a backoff when aborted, committing nothing more', async () => {
    const clock = new ManualClock();
    const { sink, seen } = scripted([{ kind: 'rejected', reason }, { kind: 'stored' }]);
    const controller = new AbortController();
    const result = driver(sink, 3, clock).commit(page, log, controller.signal);
    await clock.sleeping();
    controller.abort(new Error('stopping'));
    await expect(result).rejects.toThrow('stopping');
    expect(seen).toHaveLength(1);
  });
});
