/**
 * A capacity rule: how fresh the configured locations can be kept at the configured request rate. Pure; the
 * runtime reports it at start (runtime/connector.ts) when it exceeds the poll interval.
 */

/**
 * The shortest time one round of idle polls can take: one listing request per location under the
 * process-wide request rate (api.requestsPerSecond). When it exceeds the poll interval, a location is polled
 * every round, not every interval: the data is that much less fresh than the interval promises.
 */
export function minimumRoundMs(locations: number, requestsPerSecond: number): number {
  return (locations / requestsPerSecond) * 1000;
}
