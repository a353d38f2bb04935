/**
 * The connector processes a fault hits, and what the supervisor does about them: the running instance in
 * single mode, a random one (the fault's seed picks it) in distributed mode; kills counted for its slot; a
 * new process for its slot.
 */
import type { Fleet } from '../instances.js';
import type { LoggedProcess } from '../processes.js';
import type { Random } from '../random.js';

export interface FleetAccess {
  fleet: Fleet;
  distributed: boolean;
}

/** The instance a process fault hits: the running one in single mode, a random one in distributed mode. */
export function victim(context: FleetAccess, random: Random): LoggedProcess {
  const { fleet, distributed } = context;
  return fleet.running(distributed ? random.int(0, fleet.size - 1) : 0);
}

/** kill -9 (counted for its slot). */
export async function kill9(fleet: Fleet, instance: LoggedProcess): Promise<void> {
  fleet.fact(instance).kills++;
  await fleet.kill9(instance);
}

/** A new process for the victim's slot (the supervisor's restart after a kill). */
export function restart(fleet: Fleet, instance: LoggedProcess): LoggedProcess {
  return fleet.start(fleet.slotIndex(instance));
}
