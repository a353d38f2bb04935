/**
 * Start-up step, after ownership: this instance joins the group `<connector.name>-configurations`
 * (kafka/group/configuration-peers.ts), which tells every instance which configurations the others run. Its view
 * goes to the metrics (calls_connector_configuration_peers and _agreement) and to GET /status (`configuration`);
 * a reload applied replaces the member (`setFingerprint`). Reporting only: it never fails nor holds up the start,
 * and its failures are retried in the background.
 */
import { configurationFingerprint } from '../../config/config-diff.js';
import type { KafkaClient } from '../../kafka/client/port.js';
import { ConfigurationPeers, peerInstanceName } from '../../kafka/group/configuration-peers.js';
import { configurationStatus, type ConfigurationStatus } from '../status.js';
import type { StartContext } from './context.js';

export interface Peers {
  /** /status's `configuration`. */
  status(): ConfigurationStatus;
  /** A reload was applied: the sources running now have `fingerprint`. */
  applied(fingerprint: string): void;
}

export function joinConfigurationPeers(ctx: StartContext, kafka: KafkaClient): Peers {
  const { config, metrics, logger, clock, lifecycle, startedAt } = ctx;
  const peers = new ConfigurationPeers(kafka, {
    connectorName: config.connector.name,
    topic: config.kafka.offsetsTopic,
    fingerprint: configurationFingerprint(config),
    instance: peerInstanceName(startedAt),
    onView: (view) => metrics.configurationPeers.set(view),
    clock,
    logger,
  });
  peers.start();
  lifecycle.defer('configurations group', () => peers.close());
  return {
    status: () => configurationStatus(peers.current),
    applied: (fingerprint) => void peers.setFingerprint(fingerprint),
  };
}
