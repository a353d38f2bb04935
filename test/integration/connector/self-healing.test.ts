/**
 * Self-healing end to end, on the real broker and registry, with the real OAuth flow: a grant revoked while
 * the connector runs pauses its locations (metric, /readyz, the run goes on: no exit), and once a person
 * runs `auth login` again (a new grant in the store) they resume without a restart, publishing what changed
 * meanwhile. A read_committed reader then sees every call version exactly once.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  loginToSandbox,
  oauthConnectorConfig,
  publishedCalls,
  runConnector,
  startOAuthSandbox,
  type OAuthSandbox,
  type RunningConnector,
} from '../../support/connector.js';
import { doubledAndMissing } from '../../support/connector-process.js';
import { metricValue } from '../../support/counters.js';
import { eventually, testKafka } from '../../support/kafka.js';

describe('a connector whose grant is revoked while it runs', () => {
  let oauth: OAuthSandbox;
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  const metrics = testMetrics();

  const login = () => loginToSandbox(oauth, config);
  const readyz = async () => {
    const response = await request(`${connector.runtime.metricsAddress?.url ?? ''}/readyz`);
    return { status: response.statusCode, body: await response.body.text() };
  };

  beforeAll(async () => {
    oauth = await startOAuthSandbox('healing-client', {
      rotateRefreshTokens: true,
      data: { seed: 31, locations: 2, callsPerLocation: 40, privateRatio: 0.3 },
    });
    sandbox = oauth.sandbox;
    config = await oauthConnectorConfig(
      oauth,
      {
        poll: { intervalMs: 200, stoppedRetry: { initialDelayMs: 1_000, maxDelayMs: 2_000 } },
        metrics: { enabled: true, host: '127.0.0.1', port: 0 },
      },
      { rotationGraceMs: 0 },
    );
    await login();
    connector = await runConnector({ config, logger: silentLogger(), metrics, env: oauth.env });
  });

  afterAll(async () => {
    await connector?.stop();
    await sandbox.close();
  });

  it('pauses its locations without exiting, reports them, and resumes them once a new grant is stored', async () => {
    const { runtime } = connector;
    await eventually(
      () => runtime.status().every((s) => s.totals.traversalsCompleted >= 1),
      60_000,
      'the first traversals',
    );

    sandbox.admin.revokeTokens();
    await eventually(
      () => runtime.status().every((s) => s.stoppedBy === 'AUTH_GRANT_REVOKED'),
      30_000,
      'every location paused by the revoked grant',
    );
    expect(
      await metricValue(metrics, 'calls_connector_locations_stopped', { code: 'AUTH_GRANT_REVOKED' }),
    ).toBe(2);
    expect(await metricValue(metrics, 'calls_connector_grant_valid', { grant: 'default' })).toBe(0);
    await eventually(async () => (await readyz()).status === 503, 15_000, '/readyz to fail');
    expect((await readyz()).body).toContain('2 of 2 location(s) stopped: AUTH_GRANT_REVOKED x2');

    // Changes made while the grant is revoked must arrive after the new login.
    const changed = sandbox.locations.map((locationUid) =>
      sandbox.admin.upsertCall({ locationUid, customerPhoneNumber: '+15550001111', isPrivate: false }),
    );
    await login();
    await eventually(
      () => runtime.status().every((s) => s.stoppedBy === null),
      30_000,
      'the locations resumed without a restart',
    );
    expect(await metricValue(metrics, 'calls_connector_grant_valid', { grant: 'default' })).toBe(1);
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    await eventually(
      async () => {
        const published = await publishedCalls(testKafka(), config);
        return changed.every((c) => published.some((p) => p.uid === c.uid));
      },
      30_000,
      'the calls changed while paused, published',
    );
    expect((await metrics.locationsStopped.get()).values).toEqual([]);
    await eventually(async () => (await readyz()).status === 200, 15_000, '/readyz to pass again');

    const published = await publishedCalls(testKafka(), config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  });
});
