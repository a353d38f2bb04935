/**
 * The running configuration and its reloads: which `sources` an instance runs (its fingerprint,
 * config/config-diff.ts), so that instances running different configurations show up side by side, and what
 * each reload came to.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

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
  };
}
