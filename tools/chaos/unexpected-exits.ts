/**
 * The supervisor's record of exits the driver did not cause: each one for the report, crash loops (five exits
 * within a minute, counted once per exit while it lasts), and the delay before the slot is restarted. In
 * distributed mode every such exit is a violation: no instance may exit with an error other than the faults'
 * own kills (a woken instance rejoins, a fenced one drops its partitions).
 */
import { closingLine, type Exit, type LoggedProcess } from './processes.js';
import type { UnexpectedExit } from './summary.js';

export interface UnexpectedExitSettings {
  distributed: boolean;
  say: (message: string) => void;
  violation: (message: string) => void;
}

export class UnexpectedExits {
  readonly exits: UnexpectedExit[] = [];
  crashLoops = 0;
  private readonly recent: number[] = [];

  constructor(private readonly settings: UnexpectedExitSettings) {}

  /** Records the exit; answers the delay before the slot is restarted (longer in a crash loop). */
  record(instance: LoggedProcess, slot: string, exit: Exit): number {
    const { code, signal } = exit;
    const tail = instance.tail(8);
    this.exits.push({ instance: `${slot} (${instance.name})`, code, signal, tail });
    const now = Date.now();
    this.recent.push(now);
    const inLastMinute = this.recent.filter((t) => now - t < 60_000).length;
    if (inLastMinute >= 5) this.crashLoops++;
    this.settings.say(
      `${slot} (${instance.name}) exited unexpectedly (code ${code}, ${signal ?? 'no signal'}); restarting`,
    );
    if (this.settings.distributed)
      this.settings.violation(
        `${slot} (${instance.name}) exited unexpectedly (code ${code}, ${signal ?? 'no signal'}): ${closingLine(tail)}`,
      );
    return inLastMinute >= 5 ? 10_000 : 1000;
  }
}
