/**
 * The rate limiter's priority a location's requests carry (issue 21 point 6): backfill while it reads
 * history, live once it is caught up, for its listing and its single calls alike.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import { LocationSync } from '../../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type SingleCall } from '../../../../src/sync/model.js';
import type { ListedPage, PageRequest, RequestHint } from '../../../../src/sync/ports.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { testFingerprints } from '../../../support/sync/fingerprints.js';
import { runTraversal } from '../../../support/sync/run-traversal.js';

const LOC = '11111111-1111-1111-1111-111111111111';

/** The fake API, recording the priority of every request. */
class HintedApi extends FakeCallsApi {
  readonly hints: string[] = [];
  override async listPage(
    request: PageRequest,
    signal?: AbortSignal,
    hint?: RequestHint,
  ): Promise<ListedPage> {
    this.hints.push(`list ${hint?.priority ?? 'none'}`);
    return super.listPage(request, signal);
  }
  override async getCall(uid: string, signal?: AbortSignal, hint?: RequestHint): Promise<SingleCall | null> {
    this.hints.push(`get ${hint?.priority ?? 'none'}`);
    signal?.throwIfAborted();
    return super.getCall(uid);
  }
}

describe('LocationSync request priority', () => {
  it('marks a backfill backfill, and the polls of a caught-up location and their single calls live', async () => {
    const api = new HintedApi([{ uid: 'a', locationUid: LOC, updatedAt: '2024-03-01T12:00:00Z' }]);
    const sync = new LocationSync({
      locationUid: LOC,
      startOffset: EMPTY_OFFSET,
      api,
      enricher: new Enricher({ api, enabled: true, concurrency: 1 }),
      sink: new InMemorySink(),
      metrics: testMetrics(),
      logger: silentLogger(),
      settings: {
        pageSize: 10,
        startSince: null,
        boundaryCap: 100,
        privacy: 'redact-unless-public',
        fingerprints: testFingerprints,
        commitRetry: DEFAULT_RETRY_POLICY,
      },
      clock: { now: () => Date.parse('2026-11-24T10:00:00Z'), random: () => 0, sleep: async () => {} },
    });
    await runTraversal(sync);
    expect(api.hints).toEqual(['list backfill', 'get backfill']);
    api.hints.length = 0;
    api.upsert({ uid: 'b', locationUid: LOC, updatedAt: '2024-03-01T12:00:01Z' });
    await runTraversal(sync);
    expect(api.hints).toEqual(['list live', 'get live']);
  });
});
