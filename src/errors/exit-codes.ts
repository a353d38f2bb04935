/** Exit codes scripts can rely on. Documented in the README ("Exit codes"). */
export const ExitCode = {
  OK: 0,
  /** A runtime failure: Kafka, the API, the registry, or a location stopped by a fatal error. */
  FAILURE: 1,
  /** The command line or the configuration is wrong; nothing was attempted. */
  USAGE: 2,
  /** A check answered "not ready"/"not found" (e.g. no grant stored, no offset for the location). */
  NOT_READY: 3,
  /** Interrupted by SIGINT before completing (Ctrl-C on a one-shot command). */
  INTERRUPTED: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
