/**
 * The faults of the run's own stack: the broker killed (kill -9) and restarted on its data, the schema
 * registry stopped and started on its data; half the time a connector instance is killed and restarted
 * meanwhile (a node rebooted while the stack was down).
 */
import { sleep } from '../processes.js';
import type { LoggedProcess } from '../processes.js';
import type { Random } from '../random.js';
import type { PlannedFault } from '../schedule.js';
import type { ChaosStack } from '../stack.js';
import type { FaultResult } from './outcome.js';
import { kill9, restart, victim, type FleetAccess } from './victims.js';

/** What the stack faults need of the run. */
export interface StackFaultContext extends FleetAccess {
  stack: Pick<ChaosStack, 'killKafka' | 'startKafka' | 'stopRegistry' | 'startRegistry'>;
}

export async function brokerKill(
  fault: PlannedFault,
  random: Random,
  context: StackFaultContext,
): Promise<FaultResult> {
  await context.stack.killKafka();
  const hit = await restartConnectorMeanwhile(random, context);
  await sleep(fault.durationMs);
  await context.stack.startKafka();
  return {
    end: Date.now(),
    detail: `broker kill -9, restarted after ${(fault.durationMs / 1000).toFixed(1)} s down${meanwhile(hit, context)}`,
  };
}

export async function registryStop(
  fault: PlannedFault,
  random: Random,
  context: StackFaultContext,
): Promise<FaultResult> {
  await context.stack.stopRegistry();
  const hit = await restartConnectorMeanwhile(random, context);
  await sleep(fault.durationMs);
  await context.stack.startRegistry();
  return {
    end: Date.now(),
    detail: `registry stopped ${(fault.durationMs / 1000).toFixed(1)} s${meanwhile(hit, context)}`,
  };
}

/** Half the time the connector restarts while the stack is down: the instance killed and restarted, or null. */
async function restartConnectorMeanwhile(
  random: Random,
  context: StackFaultContext,
): Promise<LoggedProcess | null> {
  const restartConnector = random.chance(0.5);
  const hit = restartConnector ? victim(context, random) : null;
  if (hit !== null) {
    await kill9(context.fleet, hit);
    restart(context.fleet, hit);
  }
  return hit;
}

function meanwhile(hit: LoggedProcess | null, context: StackFaultContext): string {
  return hit === null ? '' : `, ${context.fleet.label(hit)} killed and restarted meanwhile`;
}
