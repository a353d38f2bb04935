/**
 * The running configuration and its reloads: which `sources` an instance runs (its fingerprint,
 * config/config-diff.ts), so that instances running different configurations show up side by side, and what
 * each reload came to; and, in this instance's own view, which configurations the other instances run and whether
 * they agree (kafka/group/configuration-peers.ts).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

const AGREEMENT_STATES = ['agreed', 'differs', 'unknown'] as const;

/** One instance's view of the configurations its connector's instances run (kafka/group/configuration-view.ts). */
export interface PeersFigures {
  state: (typeof AGREEMENT_STATES)[number];
  peers: ReadonlyArray<{ fingerprint: string; instances: readonly string[] }>;
}

export function configurationMetrics(registry: Registry) {
  const registers = [registry];
  const info = new Gauge({
    name: 'calls_connector_configuration_info',
    help: 'The fingerprint of the sources this instance runs (a stable hash of sources[]: locations, grants, startSince), as a label; the value is 1. Instances of one connector whose fingerprints differ run different locations: count(count by (fingerprint) (calls_connector_configuration_info{connector="..."})) > 1.',
    labelNames: ['fingerprint'],
    registers,
  });
  const reloads = new Counter({
    name: 'calls_connector_configuration_reloads_total',
    help: 'Configuration reloads (SIGHUP or a change of the file), by result: applied (sources changed), unchanged (nothing to apply), refused (a key that cannot change while running differs: the log names each), invalid (the file did not validate), failed (the locations could not be changed); the running configuration is kept unless applied.',
    labelNames: ['result'],
    registers,
  });
  const peers = new Gauge({
    name: 'calls_connector_configuration_peers',
    help: "Instances of this connector seen running each fingerprint of sources, in this instance's own view (the members of the group <connector.name>-configurations, described after every rebalance of it); no series while the view is unknown.",
    labelNames: ['fingerprint'],
    registers,
  });
  const agreement = new Gauge({
    name: 'calls_connector_configuration_agreement',
    help: "Whether the instances of this connector run one configuration, in this instance's own view: 1 on the series of the state it is in (agreed: every instance runs this one's fingerprint; differs: two or more fingerprints run; unknown: no view yet, or the group cannot be reached), 0 on the others.",
    labelNames: ['state'],
    registers,
  });
  for (const state of AGREEMENT_STATES) agreement.set({ state }, state === 'unknown' ? 1 : 0);
  // Every result's series exists from the start (0), so increase() has data before the first reload.
  for (const result of ['applied', 'unchanged', 'refused', 'invalid', 'failed']) reloads.inc({ result }, 0);
  return {
    configurationInfo: {
      /** Sets the running fingerprint: the one series left is the new fingerprint's. */
      set(fingerprint: string): void {
        info.reset();
        info.set({ fingerprint }, 1);
      },
      get: () => info.get(),
    },
    configurationReloads: reloads,
    configurationPeers: {
      /** Sets this instance's view of the group: a series per fingerprint seen, and the agreement state. */
      set(view: PeersFigures): void {
        peers.reset();
        for (const { fingerprint, instances } of view.peers) peers.set({ fingerprint }, instances.length);
        for (const state of AGREEMENT_STATES) agreement.set({ state }, state === view.state ? 1 : 0);
      },
    },
  };
}
