/**
 * What a chaos run is asked to do (ChaosOptions) and what it found (RunSummary, the report's input): plain
 * data, shared by the run's phases and the report.
 */
import type { CheckResult } from './checker.js';
import type { FaultFreshness } from './freshness.js';
import type { HostileOutcome } from './hostile.js';
import type { SlotFacts } from './instances.js';
import type { FaultKind, Profile } from './schedule.js';
import type { WebhookFigures } from './webhook-figures.js';

export interface ChaosOptions {
  seed: number;
  profile: Profile;
  exactlyOnce: boolean;
  runDir: string;
  keepStack: boolean;
  /** Only the hostile-bodies phase (no sandbox, no faults, no checker). */
  hostileOnly: boolean;
  /** connector.mode: distributed with `instances` processes; single mode runs one (instances = 1). */
  distributed: boolean;
  instances: number;
  /**
   * A fault's late changes (freshness.ts) fail the run. Off: they are reported (the report's Freshness table and
   * its "Late changes" list) without failing it.
   */
  holdFreshness: boolean;
}

export interface FaultOutcome {
  kind: FaultKind;
  atMs: number;
  /** When it started and ended (epoch ms); end null when its unit failed. */
  startMs: number;
  endMs: number | null;
  /** A fault that limited the API's rate: the effective interval that rate implies (FaultResult). */
  budgetIntervalMs?: number;
  /** Time from the end of the fault to the next committed progress; null = none within the cap. */
  recoveryMs: number | null;
  /**
   * Distributed mode, process faults: from the fault's start to ownership whole again among the instances
   * (every partition and location with exactly one owner); null = not within the cap. Absent otherwise.
   */
  handoverMs?: number | null;
  detail: string;
}

export interface RunSummary {
  seed: number;
  profile: Profile['name'];
  /** The planned fault phase (`--minutes`; a full run's 15 min unless shortened). */
  faultPhaseMs: number;
  mode: 'single' | 'distributed';
  /** Instances running at once (1 in single mode, outside rolling restarts and SIGSTOP replacements). */
  instances: number;
  exactlyOnce: boolean;
  locations: number;
  initialCalls: number;
  liveUpdates: number;
  liveCreates: number;
  faults: FaultOutcome[];
  killsInsideTransaction: number;
  killsBetweenRefreshAndStorage: number;
  connectorStarts: number;
  unexpectedExits: UnexpectedExit[];
  crashLoops: number;
  operatorLogins: number;
  fencedInstanceOutcomes: string[];
  rollingRestartOutcomes: string[];
  /**
   * What issue 32's faults showed, one line each: the standby's takeover once the replacement stopped, the
   * other grant's freshness during a spent quota and the held one's resumption, history under a hidden limit.
   */
  faultChecks: string[];
  settled: boolean;
  settleMs: number;
  finalExit: string;
  peakRssBytes: number;
  /** Per instance slot: processes run, kills, SIGSTOPs, unexpected exits, peak RSS, final ownership. */
  slots: SlotFacts[];
  /** Distributed mode: ownership at the end (whole, or what was wrong). */
  finalOwnership: string;
  durationMs: number;
  check: CheckResult | null;
  /** Per fault, how long the changes made during and after it waited to be in Kafka (freshness.ts). */
  freshness: FaultFreshness[];
  /**
   * Late figures reported, not violations: without `holdFreshness`, the faults with late changes; always, the
   * webhook changes' p99 outside the faults over its goal (its goal is the webhooks bench's).
   */
  lateChanges: string[];
  /** Hostile API bodies, one connector process each (tools/chaos/hostile.ts). */
  hostile: HostileOutcome[];
  /** The deliveries through the ingress judged, and each change's route to Kafka (webhook-figures.ts). */
  webhooks: WebhookFigures | null;
  violations: string[];
}

export interface UnexpectedExit {
  instance: string;
  code: number | null;
  signal: string | null;
  tail: string;
}

/** The summary of a run that has not started yet: its settings, every count at zero. */
export function newSummary(options: ChaosOptions): RunSummary {
  return {
    seed: options.seed,
    profile: options.profile.name,
    faultPhaseMs: options.profile.faultPhaseMs,
    mode: options.distributed ? 'distributed' : 'single',
    instances: options.distributed ? options.instances : 1,
    exactlyOnce: options.exactlyOnce,
    locations: options.profile.locations,
    initialCalls: 0,
    liveUpdates: 0,
    liveCreates: 0,
    faults: [],
    killsInsideTransaction: 0,
    killsBetweenRefreshAndStorage: 0,
    connectorStarts: 0,
    unexpectedExits: [],
    crashLoops: 0,
    operatorLogins: 0,
    fencedInstanceOutcomes: [],
    rollingRestartOutcomes: [],
    faultChecks: [],
    settled: false,
    settleMs: 0,
    finalExit: '',
    peakRssBytes: 0,
    slots: [],
    finalOwnership: '',
    durationMs: 0,
    check: null,
    freshness: [],
    lateChanges: [],
    hostile: [],
    webhooks: null,
    violations: [],
  };
}
