/**
 * A short-lived single-node Kafka broker (KRaft) with a SASL_PLAINTEXT listener that takes OAUTHBEARER tokens
 * and validates them as managed Kafka services do (KIP-768): Kafka's own OAuthBearerValidatorCallbackHandler,
 * checking signature (JWKS), issuer, audience and expiry. Kafka 4.x fetches only URLs it is told to allow
 * (the org.apache.kafka.sasl.oauthbearer.allowed.urls system property).
 *
 * The shared stack's broker cannot be reconfigured for this, so the test starts its own (own-broker.ts), and
 * stops it.
 */
import { startOwnBroker } from './own-broker.js';

export interface OAuthBrokerOptions {
  jwksUrl: string;
  tokenUrl: string;
  issuer: string;
  audience: string;
  /** How long start-up may take before it fails with the broker's log. */
  startTimeoutMs?: number;
}

export interface OAuthBroker {
  /** host:port of the SASL_PLAINTEXT OAUTHBEARER listener. */
  saslBroker: string;
  /** The broker's log so far (WARN and above). */
  log(): string;
  stop(): Promise<void>;
}

const LISTENER_PREFIX = 'listener.name.sasl_plaintext.oauthbearer.';

export async function startOAuthBroker(options: OAuthBrokerOptions): Promise<OAuthBroker> {
  const broker = await startOwnBroker({
    name: 'oauth',
    listeners: [{ name: 'SASL_PLAINTEXT', protocol: 'SASL_PLAINTEXT' }],
    properties: [
      'listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER',
      `${LISTENER_PREFIX}sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;`,
      `${LISTENER_PREFIX}sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler`,
      `${LISTENER_PREFIX}sasl.oauthbearer.jwks.endpoint.url=${options.jwksUrl}`,
      `${LISTENER_PREFIX}sasl.oauthbearer.expected.audience=${options.audience}`,
      `${LISTENER_PREFIX}sasl.oauthbearer.expected.issuer=${options.issuer}`,
    ],
    jvmOptions: [`-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${options.jwksUrl},${options.tokenUrl}`],
    ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
  });
  const saslBroker = broker.listeners.SASL_PLAINTEXT;
  if (saslBroker === undefined) throw new Error('the OAUTHBEARER test broker has no SASL_PLAINTEXT listener');
  return { saslBroker, log: () => broker.log(), stop: () => broker.stop() };
}
