/**
 * The backfill and reset signals accepted for the locations this instance runs and not yet carried out: the
 * answerer (signal-answers.ts) hands them in (`carryOut`, as LocationSignalTarget), each location's orchestrator
 * asks for its own before each page and says when one needs nothing more (sync/ports.ts LocationSignals). Kept
 * here, not in a LocationSync, so that a location's signals outlive the LocationSync that had them (a handover
 * back, a pause and resume). A signal is kept once, by id; one the answerer knows final (done or refused) is
 * dropped when next asked for. None is handed out while the channel says the location's partition is not caught
 * up after a handover (`answering`): a signal its previous owner finished meanwhile is known final first.
 */
import type { LocationSignal, LocationSignals } from '../../sync/ports.js';
import type { LocationSignalTarget } from './signal-ports.js';

/** What the queue asks of the signals channel, once it is open (`attach`). */
export interface SignalChannel {
  /** Whether the location is in the running configuration (LocationSignalTarget.runs). */
  configured(locationUid: string): boolean;
  /** Whether the signal may still need carrying out: no final outcome read for it. */
  open(signalId: string): boolean;
  /**
   * Whether the location's signals may be carried out now; false while its partition, newly owned, is read up to
   * its end as of the handover (signal-service.ts answering): its signals are kept and handed out afterwards.
   */
  answering(locationUid: string): boolean;
  /** The signal's effect is stored in full; `written`: its `done` went with the page (signal-answers.ts). */
  completed(signalId: string, written: boolean): void;
}

export class SignalQueue implements LocationSignalTarget, LocationSignals {
  /** By location uid in lower case (a signal names a location as its sender typed it), in the order handed in. */
  private readonly byLocation = new Map<string, LocationSignal[]>();
  private channel: SignalChannel | null = null;

  /** `outcomesInPages`: the sink writes a completing page's `done` in its transaction (exactly once). */
  constructor(private readonly options: { outcomesInPages: boolean }) {}

  /** Connects the queue to the signals channel; until then it holds nothing and carries out nothing. */
  attach(channel: SignalChannel): void {
    this.channel = channel;
  }

  runs(locationUid: string): boolean {
    return this.channel?.configured(locationUid) ?? false;
  }

  carryOut(signal: LocationSignal): void {
    const key = signal.location.toLowerCase();
    const queued = this.byLocation.get(key) ?? [];
    if (queued.some((s) => s.id === signal.id)) return;
    queued.push(signal);
    this.byLocation.set(key, queued);
  }

  pending(locationUid: string): readonly LocationSignal[] {
    const key = locationUid.toLowerCase();
    const queued = this.byLocation.get(key);
    if (queued === undefined) return [];
    const channel = this.channel;
    if (channel !== null && !channel.answering(locationUid)) return [];
    const open = queued.filter((s) => channel !== null && channel.open(s.id));
    if (open.length === 0) this.byLocation.delete(key);
    else if (open.length < queued.length) this.byLocation.set(key, open);
    return open;
  }

  settled(locationUid: string, signalId: string, complete: boolean): void {
    const key = locationUid.toLowerCase();
    const left = (this.byLocation.get(key) ?? []).filter((s) => s.id !== signalId);
    if (left.length === 0) this.byLocation.delete(key);
    else this.byLocation.set(key, left);
    if (complete) this.channel?.completed(signalId, this.options.outcomesInPages);
  }
}
