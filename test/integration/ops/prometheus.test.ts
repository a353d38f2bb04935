/**
 * A real Prometheus scrapes a running connector with the shipped alert rules loaded: an API outage (the
 * sandbox answers every calls request 503) makes CallsConnectorStaleLocation fire, and recovery clears it;
 * every panel query of the shipped Grafana dashboard returns series.
 *
 * The shipped rules wait minutes (staleness: 3 poll intervals + 300 s, then `for: 5m`). The test loads a
 * copy with time compressed 60-fold (minutes become seconds: every `for:`, range selector and the
 * staleness grace, see compressRules) and polls every second, so the real connector's real metrics drive
 * the same expressions in seconds: threshold 3 x 1 s + 5 s = 8 s, then `for: 5s`.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logging/logger.js';
import type { FaultSettings, RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  loginToSandbox,
  oauthConnectorConfig,
  runConnector,
  startOAuthSandbox,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually } from '../../support/kafka.js';
import {
  compressRules,
  readYaml,
  startPrometheus,
  type PromAlert,
  type RunningPrometheus,
} from '../../support/prometheus.js';
import { uniqueName } from '../../support/stack.js';

const CONFIG_DIR = join(import.meta.dirname, '../../../config');
const TIME_COMPRESSION = 60;
const STALE = 'CallsConnectorStaleLocation';

/**
 * What a real API does now and then, throughout: the events some panels count (429s, early token expiry
 * and refreshes, refused cursors and restarts, refused single-call requests and unenriched calls).
 */
const BACKGROUND_FAULTS: Partial<FaultSettings> = {
  rateLimitRate: 0.02,
  retryAfterSeconds: 0,
  accessTokenEarlyExpiryRate: 0.02,
  cursorRejectionRate: 0.1,
  singleCallFailures: [
    {
      rate: 0.05,
      attempts: 0,
      answer: { status: 403, body: '{"error":"forbidden"}', contentType: 'application/json' },
    },
  ],
};

interface Panel {
  title?: string;
  panels?: Panel[];
  targets?: { expr?: string }[];
}

/** Every (panel title, query) of the dashboard, row panels included. */
function panelQueries(panels: Panel[]): { title: string; expr: string }[] {
  return panels.flatMap((panel) => [
    ...(panel.targets ?? []).flatMap((t) =>
      t.expr === undefined ? [] : [{ title: panel.title ?? '', expr: t.expr }],
    ),
    ...panelQueries(panel.panels ?? []),
  ]);
}

/**
 * A dashboard query as Grafana sends it with every instance and location selected ("All": `.*`) and a
 * rate window of 4 scrape intervals plus margin (Grafana's $__rate_interval is at least 4 scrapes).
 */
function asGrafanaSends(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '10s')
    .replaceAll('$instance', '.*')
    .replaceAll('$location', '.*');
}

describe('Prometheus scraping a running connector with the shipped alert rules and dashboard', () => {
  let sandbox: RunningSandbox;
  let connector: RunningConnector;
  let prometheus: RunningPrometheus;

  const staleAlerts = async (state?: PromAlert['state']) =>
    (await prometheus.alerts()).filter(
      (a) => a.labels.alertname === STALE && (state === undefined || a.state === state),
    );

  beforeAll(async () => {
    const oauth = await startOAuthSandbox('prometheus-client', {
      data: { seed: 24, locations: 3, callsPerLocation: 60, privateRatio: 0.3 },
      faults: BACKGROUND_FAULTS,
    });
    sandbox = oauth.sandbox;
    // A real OAuth grant (the grant and token panels), polled every second (the staleness threshold is
    // seconds), short retries (recovery shows at once), small pages (several per traversal).
    const config = await oauthConnectorConfig(oauth, {
      poll: { intervalMs: 1_000 },
      api: { pageSize: 10, retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 200 } },
      kafka: { heartbeatIntervalMs: 1_000, heartbeatTopic: uniqueName('heartbeats') },
      metrics: { enabled: true, host: '127.0.0.1', port: 0 },
      // The webhook receiver on (the webhook panels' series), on a port of its own; with webhooks on, locations are
      // polled every reconcileIntervalMs, here the poll interval the staleness test needs.
      webhooks: { enabled: true, host: '127.0.0.1', port: 0, reconcileIntervalMs: 1_000 },
    });
    await loginToSandbox(oauth, config);
    // The runtime's own metrics (process metrics, poll interval, build info), as the CLI runs it.
    const env = {
      ...oauth.env,
      CALLS_CONNECTOR_WEBHOOK_SECRET: `whsec_${Buffer.from('prometheus-test-secret').toString('base64')}`,
    };
    connector = await runConnector({ config, logger: silentLogger(), env });
    const target = new URL(connector.runtime.metricsAddress?.url ?? '').host;

    const shipped = await readYaml(join(CONFIG_DIR, 'prometheus/alerts.yml'));
    prometheus = await startPrometheus({
      config: {
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: ['alerts.yml'],
        // The job name the shipped rules expect (config/prometheus/prometheus.yml).
        scrape_configs: [{ job_name: 'calls-connector', static_configs: [{ targets: [target] }] }],
      },
      rules: { 'alerts.yml': compressRules(shipped, TIME_COMPRESSION, { [STALE]: 300 }) },
    });
    await prometheus.targetsUp();
  });

  afterAll(async () => {
    await prometheus?.stop();
    await connector?.stop();
    await sandbox?.close();
  });

  it('fires the staleness alert for every location during an API outage and clears it after recovery', async () => {
    // Healthy first: every location completes traversals, nothing is stale.
    await eventually(
      async () =>
        (await prometheus.query('calls_connector_location_last_success_timestamp_seconds')).length === 3,
      20_000,
      'a completed traversal of each location in Prometheus',
    );
    expect(await staleAlerts()).toEqual([]);

    sandbox.admin.setFaults({ serverErrorRate: 1, serverErrorStatuses: [503] });
    await eventually(
      async () => (await staleAlerts('firing')).length === 3,
      40_000,
      `${STALE} firing for 3 locations`,
    );
    expect((await staleAlerts('firing')).map((a) => a.labels.location).sort()).toEqual(
      [...sandbox.locations].sort(),
    );

    sandbox.admin.setFaults({ serverErrorRate: 0 });
    await eventually(
      async () => (await staleAlerts()).length === 0,
      20_000,
      `${STALE} cleared after recovery`,
    );
  });

  it('answers every panel query of the shipped dashboard with series', async () => {
    const dashboard = (await readYaml(join(CONFIG_DIR, 'grafana/calls-connector.json'))) as {
      panels: Panel[];
    };
    const queries = panelQueries(dashboard.panels);
    expect(queries.length).toBeGreaterThan(20);
    const empty: string[] = [];
    for (const { title, expr } of queries) {
      if ((await prometheus.query(asGrafanaSends(expr))).length === 0) empty.push(`${title}: ${expr}`);
    }
    expect(empty).toEqual([]);
  });
});
