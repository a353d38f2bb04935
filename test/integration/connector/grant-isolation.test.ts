/**
 * Issue 32 item 2 on the real stack, with the real OAuth flow: two grants, G reading three locations and H
 * one, each token with a quota of requests per hour. G spends its quota during its first traversals and the
 * API answers 429 with a Retry-After of about an hour: G's scope is parked (held api.retry.maxRetryAfterMs,
 * 5 min). Before, each of G's locations falling due took a worker that then waited in the rate limiter, so
 * H's location was not polled for the whole hold. Now G's locations are parked (throttled) without a worker
 * and H's is polled at its interval. The connector has a single worker: H's polls while G's three locations
 * keep falling due (every second) are the evidence that none of them holds it. About 15 s on the shared stack.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  loginToSandbox,
  oauthConnectorConfig,
  runConnector,
  startOAuthSandbox,
  type OAuthSandbox,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually } from '../../support/kafka.js';

/** Requests per token per hour: more than H's location needs during the test, less than G's three need. */
const QUOTA = 70;
/** The poll interval of every location. */
const INTERVAL_MS = 1_000;
/** H's polls counted while G is parked. */
const POLLS = 5;

describe('two grants, one parked for an hour by a spent quota', () => {
  let oauth: OAuthSandbox;
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  let onG: string[];
  let onH: string;

  beforeAll(async () => {
    oauth = await startOAuthSandbox('grants-client', {
      data: { seed: 33, locations: 4, callsPerLocation: 20, privateRatio: 0.3 },
      faults: {
        rateLimit: {
          requestsPerSecond: 50,
          burst: 50,
          per: 'token',
          quota: QUOTA,
          quotaWindowSeconds: 3_600,
        },
      },
    });
    sandbox = oauth.sandbox;
    onG = sandbox.locations.slice(0, 3);
    onH = sandbox.locations[3]!;
    const base = await oauthConnectorConfig(oauth, {
      poll: { intervalMs: INTERVAL_MS, maxLocationsInFlight: 1 },
      api: { requestsPerSecond: 20 },
    });
    const [source] = base.sources;
    config = {
      ...base,
      sources: [
        { ...source!, grant: 'G', locations: onG },
        { ...source!, grant: 'H', locations: [onH] },
      ],
    };
    for (const grant of ['G', 'H'])
      await loginToSandbox(oauth, { ...config, oauth: { ...config.oauth!, grant } });
    connector = await runConnector({ config, logger: silentLogger(), env: oauth.env });
  });

  afterAll(async () => {
    await connector?.stop();
    await sandbox?.close();
  });

  it("parks G's locations without a worker and polls H's location at its interval meanwhile", async () => {
    const status = () => connector.runtime.status();
    const of = (uid: string) => status().find((s) => s.locationUid === uid);
    await eventually(
      () => onG.every((uid) => of(uid)?.state === 'throttled'),
      30_000,
      "G's locations parked by G's spent quota",
    );
    const refusedForQuota = sandbox.admin.stats().faults.quotaExhausted;
    expect(refusedForQuota).toBeGreaterThan(0);
    const before = of(onH)?.totals.traversalsCompleted ?? 0;
    const listedBefore = sandbox.admin.stats().listRequests;
    // At its interval: POLLS polls take POLLS intervals; twice that allows every other phase instant missed
    // on a loaded machine, and fails a location polled every few seconds or not at all.
    await eventually(
      () => (of(onH)?.totals.traversalsCompleted ?? 0) >= before + POLLS,
      2 * POLLS * INTERVAL_MS,
      `${POLLS} more polls of H's location while G is parked`,
    );
    // The service saw H's listings, and nothing from G: a request with G's token would have been refused for
    // the spent quota again.
    expect(sandbox.admin.stats().listRequests - listedBefore).toBeGreaterThanOrEqual(POLLS - 1);
    expect(sandbox.admin.stats().faults.quotaExhausted).toBe(refusedForQuota);
    // G is still parked (its hold lasts minutes), none counted as failed.
    for (const uid of onG) {
      expect(of(uid)).toMatchObject({ state: 'throttled', consecutiveFailures: 0, stoppedBy: null });
    }
  });
});
