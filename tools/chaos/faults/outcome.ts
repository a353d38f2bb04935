/**
 * What a fault unit gives back to the run: its own outcome (when it ended, what happened), and the facts it
 * records for the report as they happen (violations, issue 32's checks, SIGSTOP and rolling-restart outcomes,
 * kills that landed inside a transaction or between a refresh and its storage).
 */

export interface FaultResult {
  /** When the fault ended (epoch ms): the reference of its recovery time. */
  end: number;
  /** What the driver did and saw, for the event log and the report. */
  detail: string;
  /** Distributed mode: from the fault's start to ownership whole again (null: not within the cap). */
  handoverMs?: number | null;
  /**
   * A fault that limits the API's rate: the effective interval (ms) that rate implies (fault-checks.ts
   * budgetIntervalMs), the most the freshness rule lets the connector's stretch count (freshness.ts).
   */
  budgetIntervalMs?: number;
}

/** The report's sink, the run's summary behind it. */
export interface FaultReport {
  violation: (message: string) => void;
  /** One line per issue-32 fault: what its check showed. */
  faultCheck: (text: string) => void;
  /** A SIGSTOP's outcome: the paused instance fenced (single mode) or rejoined (distributed mode). */
  fencedInstance: (text: string) => void;
  rollingRestart: (text: string) => void;
  killInsideTransaction: () => void;
  killBetweenRefreshAndStorage: () => void;
}

/** How long a held grant's locations, or a standby taking over, may take once the fault ends. */
export const RESUME_CAP_MS = 120_000;
