/**
 * The names and ports of one chaos run. The topics and the connector name are the run's own, so that a stack
 * kept from an earlier run (--keep-stack) holds nothing of this one.
 */
/**
 * `webhookOffset`: a process's webhook receiver listens on its metrics port plus this (21510–21539); the
 * ingress in front of them (webhook-ingress.ts) on `ingress`.
 */
export const PORTS = {
  sandbox: 21443,
  callback: 21476,
  ingress: 21478,
  metricsBase: 21410,
  metricsCount: 30,
  webhookOffset: 100,
} as const;

export const RUN_ID = `${Date.now().toString(36)}`;

export const TOPICS = {
  calls: `chaos-${RUN_ID}-calls`,
  offsets: `chaos-${RUN_ID}-offsets`,
  dlq: `chaos-${RUN_ID}-dlq`,
  tokens: `chaos-${RUN_ID}-tokens`,
} as const;

export const CONNECTOR_NAME = `chaos-${RUN_ID}`;

/** The key of a location's offset records in the offsets topic. */
export function offsetKey(location: string): string {
  return `${CONNECTOR_NAME}/${location}`;
}
