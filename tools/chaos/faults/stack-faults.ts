/**
 * The faults of the run's own stack: the broker killed (kill -9) and restarted on its data, the schema
 * registry stopped and started on its data; half the time a connector instance is killed and restarted
 * meanwhile (a node rebooted while the stack was down).
 */
import { sleep, type LoggedProcess } from '../processes.js';
import type { Random } from '../random.js';
import type { PlannedFault } from '../schedule.js';
import type { ChaosStack } from '../stack.js';
import type { FaultResult } from './outcome.js';
import { kill9, restart, victim, type FleetAccess } from './victims.js';

/** What the stack faults need of the run. */
export interface StackFaultContext extends FleetAccess {
  stack: Pick<ChaosStack, 'killKafka' | 'startKafka' | 'stopRegistry' | 'startRegistry'>;
}

type Stack = StackFaultContext['stack'];

/** The broker killed (kill -9) for the fault's duration, then started on its data. */
export const brokerKill = outage(
  (stack) => stack.killKafka(),
  (stack) => stack.startKafka(),
  (seconds) => `broker kill -9, restarted after ${seconds} s down`,
);

/** The registry stopped (SIGTERM) for the fault's duration, then started on its data. */
export const registryStop = outage(
  (stack) => stack.stopRegistry(),
  (stack) => stack.startRegistry(),
  (seconds) => `registry stopped ${seconds} s`,
);

/** A stack component down for the fault's duration, a connector instance restarted meanwhile half the time. */
function outage(
  down: (stack: Stack) => Promise<unknown>,
  up: (stack: Stack) => Promise<unknown>,
  describe: (seconds: string) => string,
): (fault: PlannedFault, random: Random, context: StackFaultContext) => Promise<FaultResult> {
  return async (fault, random, context) => {
    await down(context.stack);
    const hit = await restartConnectorMeanwhile(random, context);
    await sleep(fault.durationMs);
    await up(context.stack);
    const meanwhile = hit === null ? '' : `, ${context.fleet.label(hit)} killed and restarted meanwhile`;
    return { end: Date.now(), detail: `${describe((fault.durationMs / 1000).toFixed(1))}${meanwhile}` };
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
