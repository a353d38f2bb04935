/**
 * The signals of one location as the runtime's queue keeps them (runtime/signals/signal-queue.ts), for the
 * location's tests: those settled leave it, and each settle is recorded with whether it completed the signal.
 */
import type { LocationSignal, LocationSignals } from '../../../src/sync/ports.js';

export class PendingSignals implements LocationSignals {
  readonly settledLog: Array<[string, boolean]> = [];
  constructor(private signals: LocationSignal[]) {}
  pending(): readonly LocationSignal[] {
    return this.signals;
  }
  settled(_location: string, signalId: string, complete: boolean): void {
    this.signals = this.signals.filter((s) => s.id !== signalId);
    this.settledLog.push([signalId, complete]);
  }
}
