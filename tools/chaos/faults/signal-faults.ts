/**
 * Operators' signals to the running connector (issue 42), sent as an operator sends them: `calls-connector
 * signal` through the built CLI (operator.ts). Each unit records what it sent for the checker, which holds the
 * connector to it (checker.ts reReadMissing: a backfill's range published once more, completely).
 */
import type { Backfill, TruthCall } from '../judge.js';
import type { PlannedFault } from '../schedule.js';
import type { Random } from '../random.js';
import type { SandboxAdmin } from '../sandbox-admin.js';
import type { FaultReport, FaultResult } from './outcome.js';

export interface SignalFaultContext {
  admin: Pick<SandboxAdmin, 'call'>;
  locations: readonly string[];
  /**
   * `calls-connector signal backfill ... --wait` (operator.ts): the signal's id once printed (null: none), and
   * when the command ends, its last outcome line and exit code.
   */
  sendBackfill: (
    backfill: Omit<Backfill, 'id'>,
    timeoutMs: number,
  ) => Promise<{ id: string | null; ended: Promise<{ outcome: string | null; code: number | null }> }>;
  /** A backfill sent, and its command's end: the checker holds the connector to its range. */
  backfilled: (backfill: Backfill, ended: Promise<void>) => void;
  report: FaultReport;
}

/**
 * A backfill of one location, from its first call's updatedAt up to (excluding) that of the call a quarter of
 * the way through its history: the owner reads that range again beside its live polls while the other faults
 * go on. The fault ends once the signal is sent; the run awaits its `done` (`--wait`, up to the fault's duration)
 * before the checker, and the settle phase waits for its history lane to merge.
 */
export async function signalBackfill(
  fault: PlannedFault,
  random: Random,
  context: SignalFaultContext,
): Promise<FaultResult> {
  const location = random.pick(context.locations);
  const { data } = await context.admin.call<{ data: TruthCall[] }>(
    'GET',
    `truth?locationUid=${encodeURIComponent(location)}`,
  );
  const instants = [...new Set(data.map((c) => Date.parse(c.updatedAt)))].sort((a, b) => a - b);
  const since = instants[0];
  const until = instants[Math.floor(instants.length / 4)];
  if (since === undefined || until === undefined || since >= until)
    return { end: Date.now(), detail: `no range to backfill in ${location} (${instants.length} instants)` };
  const range = { location, since: new Date(since).toISOString(), until: new Date(until).toISOString() };
  const inRange = data.filter((c) => Date.parse(c.updatedAt) >= since && Date.parse(c.updatedAt) < until);
  const described = `backfill of ${location} [${range.since}, ${range.until}), ${inRange.length} calls`;
  const sent = await context.sendBackfill(range, fault.durationMs);
  if (sent.id === null) {
    const { code } = await sent.ended;
    context.report.violation(`signal-backfill: the signal was not sent (exit ${code})`);
    return { end: Date.now(), detail: `${described}: not sent (exit ${code})` };
  }
  const id = sent.id;
  const ended = sent.ended.then(({ outcome, code }) => {
    const state = outcome ?? 'no outcome';
    context.report.faultCheck(`${described}, signal ${id}: ${state}${code === 0 ? '' : ` (exit ${code})`}`);
    if (code !== 0) context.report.violation(`signal-backfill: ${id} not done: ${state} (exit ${code})`);
  });
  context.backfilled({ id, ...range }, ended);
  return { end: Date.now(), detail: `${described}: sent as ${id}` };
}
