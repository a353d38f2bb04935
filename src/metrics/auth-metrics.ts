/** The OAuth grants' metrics: refreshes, token expiry, whether a grant still works. */
import { Counter, Gauge, type Registry } from 'prom-client';

export function authMetrics(registry: Registry) {
  const registers = [registry];
  return {
    tokenRefreshes: new Counter({
      name: 'calls_connector_token_refreshes_total',
      help: 'OAuth token refreshes, by result (success, failure, revoked).',
      labelNames: ['grant', 'result'] as const,
      registers,
    }),
    tokenExpiry: new Gauge({
      name: 'calls_connector_token_expiry_timestamp_seconds',
      help: 'Unix time at which the current access token of a grant expires.',
      labelNames: ['grant'] as const,
      registers,
    }),
    grantValid: new Gauge({
      name: 'calls_connector_grant_valid',
      help: '1 while a grant can obtain tokens, 0 once its refresh was refused (run `auth login` again).',
      labelNames: ['grant'] as const,
      registers,
    }),
  };
}
