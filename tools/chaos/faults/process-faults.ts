/**
 * The faults that hit connector processes: kill -9 (at a random moment or aimed at an open transaction),
 * kill -9 right after a token refresh, rolling restart, SIGSTOP (short and past the transaction and request
 * timeouts) with a replacement that must keep writing, and issue 32's replacement stopped after the paused
 * one woke. Distributed mode's SIGSTOP and rolling restart are distributed.ts's; single mode's are here.
 */
import { distributedRollingRestart, distributedSigstop, type DistributedDriver } from '../distributed.js';
import { pausedReplacementFailures } from '../fault-checks.js';
import { sleep, until, type Exit, type LoggedProcess } from '../processes.js';
import type { Random } from '../random.js';
import type { SandboxAdmin } from '../sandbox-admin.js';
import type { PlannedFault } from '../schedule.js';
import type { TopicObserver } from '../topic-observer.js';
import { RESUME_CAP_MS, type FaultReport, type FaultResult } from './outcome.js';
import { kill9, restart, victim, type FleetAccess } from './victims.js';

/** How far the sandbox clock moves to expire every access token. */
const TOKEN_LIFETIME_MS = 10 * 3600_000;

/** What the process faults need of the run. */
export interface ProcessFaultContext extends FleetAccess {
  driver: DistributedDriver;
  /** The sandbox's clock and token-request count (refresh-kill). */
  admin: Pick<SandboxAdmin, 'call'>;
  topics: Pick<TopicObserver, 'transactionOpenNow' | 'openTransaction' | 'tokensWritten'>;
  /** The time from `after` to the next committed page; null when none within `capMs`. */
  waitForProgress: (after: number, capMs: number) => Promise<number | null>;
  report: FaultReport;
}

/** kill -9 of the victim, half the time aimed at an open transaction; restarted after the fault's duration. */
export async function connectorKill(
  fault: PlannedFault,
  random: Random,
  context: ProcessFaultContext,
): Promise<FaultResult> {
  const { fleet } = context;
  const hit = victim(context, random);
  // Half the kills are aimed: at a moment the broker shows a transaction open (last stable offset of
  // the calls topic below its high watermark); the others land at a random moment.
  const aimed = random.chance(0.5);
  if (aimed) await until(() => context.topics.transactionOpenNow(), 5000, 10);
  else await sleep(random.int(0, 500));
  await kill9(fleet, hit);
  // Only single mode can prove it: in distributed mode the other instances keep writing.
  const inside = !context.distributed && (await context.topics.openTransaction().catch(() => false));
  if (inside) context.report.killInsideTransaction();
  const detail = `kill -9 ${fleet.label(hit)} (${aimed ? 'aimed' : 'random moment'})${inside ? ' inside an open transaction' : ''}`;
  return restartAfter(fault, context, hit, detail);
}

/**
 * Expire every access token (sandbox clock + 10 h), wait for the refresh request to reach the token
 * endpoint, and kill -9 at once: with rotated refresh tokens the new one may never be stored.
 */
export async function refreshKill(
  fault: PlannedFault,
  random: Random,
  context: ProcessFaultContext,
): Promise<FaultResult> {
  const { admin, fleet, topics } = context;
  const hit = victim(context, random);
  const writtenBefore = await topics.tokensWritten();
  const stats = async (): Promise<number> =>
    (await admin.call<{ data: { tokenRequests: number } }>('GET', 'stats')).data.tokenRequests;
  const before = await stats();
  await admin.call('POST', 'clock/advance', { ms: TOKEN_LIFETIME_MS + 60_000 });
  const refreshed = await until(async () => (await stats()) > before, 60_000, 2);
  await sleep(random.int(0, 20));
  await kill9(fleet, hit);
  const writtenAfter = await topics.tokensWritten().catch(() => writtenBefore);
  const between = refreshed && writtenAfter === writtenBefore;
  if (between) context.report.killBetweenRefreshAndStorage();
  // Distributed mode: every instance refreshes; the victim is a random one, the refresh seen may be another's.
  const detail = refreshed
    ? `kill -9 ${fleet.label(hit)} right after a refresh request${between ? ', before the new tokens were stored' : ' (tokens already stored)'}`
    : `kill -9 ${fleet.label(hit)} (no refresh seen within 60 s)`;
  return restartAfter(fault, context, hit, detail);
}

/** The supervisor's restart of a killed instance, after the fault's duration: the fault's end. */
async function restartAfter(
  fault: PlannedFault,
  context: ProcessFaultContext,
  killed: LoggedProcess,
  detail: string,
): Promise<FaultResult> {
  await sleep(fault.durationMs);
  restart(context.fleet, killed);
  return { end: Date.now(), detail };
}

/**
 * Single mode: a second instance of the same name while the first runs, then SIGTERM to the first, which
 * must exit 0. Distributed mode: every instance in turn (distributed.ts).
 */
export async function rollingRestart(
  _fault: PlannedFault,
  _random: Random,
  context: ProcessFaultContext,
): Promise<FaultResult> {
  const { fleet, report } = context;
  if (context.distributed) {
    const { end, handoverMs, text } = await distributedRollingRestart(context.driver);
    report.rollingRestart(text);
    return { end, handoverMs, detail: `rolling restart of every instance: ${text}` };
  }
  const old = fleet.running(0);
  fleet.retire(old);
  const next = fleet.start(0);
  const ready = await until(() => fleet.ready(next), 120_000, 500);
  old.signal('SIGTERM');
  const exit = await Promise.race([old.exited, sleep(60_000).then(() => null)]);
  if (exit === null) await kill9(fleet, old);
  const text = `${old.name} ${exit === null ? 'did not exit within 60 s of SIGTERM (killed)' : `exited ${exit.code ?? exit.signal}`}, ${next.name} ${ready ? 'ready' : 'not ready'}`;
  report.rollingRestart(text);
  if (exit !== null && exit.code !== 0) report.violation(`rolling restart: ${text}`);
  return { end: Date.now(), detail: `rolling restart: ${text}` };
}

/**
 * `sigstop` and `sigstop-long`. Single mode: SIGSTOP the active instance, let a new one take over, SIGCONT
 * the old one: it must be fenced, and the replacement must have committed pages while the old one was paused
 * and still commit pages, as the writer, once the old one was stopped (pausedReplacementFailures). Distributed
 * mode: distributed.ts's.
 */
export const sigstop = pauseFault(async (fault, context, { frozen, next, tookOver }) => {
  const { fleet, report } = context;
  // Woken, it meets the fencing on its next commit and either exits or stands by (/status role no longer writer);
  // waiting for either, not a fixed 30 s, keeps the short form short. 30 s at most, as before.
  // Only a definite "not the writer" counts: an instance too busy to answer has not stood by yet.
  let woke: Exit | null = null;
  void frozen.exited.then((e) => (woke = e));
  await until(async () => woke !== null || !(await fleet.writing(frozen).catch(() => true)), 30_000, 250);
  const exit = woke ?? (await Promise.race([frozen.exited, sleep(1000).then(() => null)]));
  let fate: string;
  if (exit !== null) fate = `exited ${exit.code ?? exit.signal} after SIGCONT`;
  else {
    frozen.signal('SIGTERM');
    const late = await Promise.race([frozen.exited, sleep(30_000).then(() => null)]);
    if (late === null) await kill9(fleet, frozen);
    fate = `stood by after SIGCONT; SIGTERM → ${late === null ? 'killed' : `exit ${late.code ?? late.signal}`}`;
  }
  // The replacement must still be the writer, and still commit pages, once the old one woke up and was stopped
  // (a paused instance used to fence its replacement back, leaving nothing writing once it was stopped).
  const stoppedAt = Date.now();
  const writer = await until(() => fleet.writing(next).catch(() => false), 60_000, 500);
  const writesAfterMs = await context.waitForProgress(stoppedAt, RESUME_CAP_MS);
  const text =
    `${frozen.name} stopped ${Math.round(fault.durationMs / 1000)} s, ${next.name} ${tookOver === null ? 'made NO progress' : 'took over'}, ${frozen.name} ${fate}, ` +
    `${next.name} ${writer ? 'still the writer' : 'NOT the writer'}, pages ${writesAfterMs === null ? 'NOT committed' : `committed ${(writesAfterMs / 1000).toFixed(1)} s`} after the stop`;
  report.fencedInstance(text);
  const failures = pausedReplacementFailures({ tookOverMs: tookOver, writer, writesAfterMs });
  if (failures.length > 0) report.violation(`SIGSTOP: ${failures.join('; ')}: ${text}`);
  return { end: Date.now(), detail: `SIGSTOP: ${text}` };
});

/**
 * Issue 32: SIGSTOP the writer A, start its replacement B (a supervisor's), wake A (it stands by), then stop
 * B, as a blue/green switch rolled back does. A must take over: the writer on /status again and pages committed,
 * each within RESUME_CAP_MS of B's exit (the "writes resumed" time of the report). Distributed mode has no
 * replacement: it runs as sigstop.
 */
export const replacementStopped = pauseFault(async (fault, context, paused) => {
  const { fleet, report } = context;
  const { frozen: standby, next: replacement, tookOver } = paused;
  // Woken, it meets the fencing and stands by (/status role standby); only a definite answer counts.
  const stoodBy = await until(
    async () => !standby.running || !(await fleet.writing(standby).catch(() => true)),
    60_000,
    250,
  );
  const replacementWriting = await until(() => fleet.writing(replacement).catch(() => false), 60_000, 500);
  const head = `${standby.name} stopped ${Math.round(fault.durationMs / 1000)} s, ${replacement.name} ${tookOver === null ? 'made NO progress' : 'took over'}`;
  if (!standby.running || !stoodBy || !replacementWriting) {
    const text = `${head}, ${standby.name} ${standby.running ? (stoodBy ? 'stood by' : 'did NOT stand by within 60 s') : `EXITED ${standby.exit?.code ?? standby.exit?.signal} instead of standing by`}, ${replacement.name} ${replacementWriting ? 'writing' : 'NOT writing'}: the takeover was not tried`;
    report.faultCheck(`replacement stopped: ${text}`);
    report.violation(`replacement-stopped: ${text}`);
    if (standby.running) await kill9(fleet, standby);
    return { end: Date.now(), detail: `replacement stopped: ${text}` };
  }
  // The standby is the slot's process again: the replacement goes, as a rolled-back switch stops it.
  fleet.reinstate(standby);
  fleet.retire(replacement);
  replacement.signal('SIGTERM');
  const exit = await Promise.race([replacement.exited, sleep(60_000).then(() => null)]);
  if (exit === null) await kill9(fleet, replacement);
  const stoppedAt = Date.now();
  const writer = await until(() => fleet.writing(standby).catch(() => false), RESUME_CAP_MS, 250);
  const writerMs = writer ? Date.now() - stoppedAt : null;
  const resumedMs = await context.waitForProgress(stoppedAt, RESUME_CAP_MS);
  const text =
    `${head}, ${standby.name} stood by after SIGCONT; ${replacement.name} stopped (${exit === null ? 'killed: no exit within 60 s of SIGTERM' : `exit ${exit.code ?? exit.signal}`}); ` +
    `${standby.name} ${writerMs === null ? 'did NOT take over' : `took over (writer) after ${(writerMs / 1000).toFixed(1)} s`}, ` +
    `writes ${resumedMs === null ? 'did NOT resume' : `resumed after ${(resumedMs / 1000).toFixed(1)} s`}`;
  report.faultCheck(`replacement stopped: ${text}`);
  if (tookOver === null || writerMs === null || resumedMs === null || exit === null || exit.code !== 0)
    report.violation(`replacement-stopped: ${text}`);
  return { end: stoppedAt, detail: `replacement stopped: ${text}` };
});

/** A paused instance, its replacement, and when the replacement first committed (null: not within 180 s). */
interface Paused {
  frozen: LoggedProcess;
  next: LoggedProcess;
  tookOver: number | null;
}

/**
 * A SIGSTOP fault: in distributed mode distributed.ts's (one instance among several paused, no replacement:
 * the group moves its work); in single mode `afterPause`, once the paused instance was replaced and woken.
 */
function pauseFault(
  afterPause: (fault: PlannedFault, context: ProcessFaultContext, paused: Paused) => Promise<FaultResult>,
): (fault: PlannedFault, random: Random, context: ProcessFaultContext) => Promise<FaultResult> {
  return async (fault, random, context) => {
    if (!context.distributed) return afterPause(fault, context, await pauseWhileReplaced(fault, context));
    const { end, handoverMs, text } = await distributedSigstop(context.driver, fault, random);
    context.report.fencedInstance(text);
    return { end, handoverMs, detail: `SIGSTOP: ${text}` };
  };
}

/**
 * Single mode: SIGSTOP the running instance and start its replacement (a supervisor's) at once; SIGCONT the
 * paused one after the fault's duration. `tookOver`: the replacement's first progress (null: none in 180 s).
 */
async function pauseWhileReplaced(fault: PlannedFault, context: ProcessFaultContext): Promise<Paused> {
  const { fleet } = context;
  const frozen = fleet.running(0);
  fleet.retire(frozen);
  fleet.fact(frozen).sigstops++;
  frozen.signal('SIGSTOP');
  const started = Date.now();
  const next = fleet.start(0);
  const tookOver = await context.waitForProgress(started, 180_000);
  await sleep(Math.max(0, fault.durationMs - (Date.now() - started)));
  frozen.signal('SIGCONT');
  return { frozen, next, tookOver };
}
