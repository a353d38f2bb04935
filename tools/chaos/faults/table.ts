/**
 * Which unit applies each fault kind of the schedule (schedule.ts): the only place a kind is dispatched. A
 * new kind is added to schedule.ts and given a unit here (the compiler and
 * test/unit/tools/chaos-fault-table.test.ts refuse a kind without one).
 */
import type { Random } from '../random.js';
import { PROCESS_FAULTS, type FaultKind, type PlannedFault } from '../schedule.js';
import {
  apiFaultWindow,
  cursorExpiryInSameInstantGroup,
  grantQuotaSpent,
  hiddenLimitBelowLiveDemand,
  hiddenLimitResetForms,
  type ApiFaultContext,
} from './api-faults.js';
import type { FaultResult } from './outcome.js';
import {
  connectorKill,
  refreshKill,
  replacementStopped,
  rollingRestart,
  sigstop,
  type ProcessFaultContext,
} from './process-faults.js';
import { signalBackfill, type SignalFaultContext } from './signal-faults.js';
import { brokerKill, registryStop, type StackFaultContext } from './stack-faults.js';
import {
  webhookBrokerRestart,
  webhookForgedFlood,
  webhookReceiverKill,
  webhookReplayFlood,
  webhookRetryPending,
  type WebhookFaultContext,
} from './webhook-faults.js';

/** Everything any fault unit needs of the run; each unit asks only for its family's part. */
export type FaultContext = ProcessFaultContext &
  StackFaultContext &
  ApiFaultContext &
  SignalFaultContext &
  WebhookFaultContext;

/** Applies one fault; resolves with its outcome once it ended. `random` is the fault's own (its seed). */
export type FaultUnit = (fault: PlannedFault, random: Random, context: FaultContext) => Promise<FaultResult>;

export const FAULT_UNITS: Readonly<Record<FaultKind, FaultUnit>> = {
  'connector-kill': connectorKill,
  'refresh-kill': refreshKill,
  'broker-kill': brokerKill,
  'registry-stop': registryStop,
  'rolling-restart': rollingRestart,
  sigstop,
  'sigstop-long': sigstop,
  'replacement-stopped': replacementStopped,
  'api-latency': apiFaultWindow,
  'api-429-storm': apiFaultWindow,
  'api-5xx': apiFaultWindow,
  'api-dropped-connections': apiFaultWindow,
  'api-malformed-bodies': apiFaultWindow,
  'api-non-json-errors': apiFaultWindow,
  'api-cursor-rejected': apiFaultWindow,
  'api-token-expiry': apiFaultWindow,
  'api-single-call-failures': apiFaultWindow,
  'api-single-call-newer-version': apiFaultWindow,
  'api-grant-quota-spent': grantQuotaSpent,
  'api-limit-below-live-demand': hiddenLimitBelowLiveDemand,
  'api-limit-reset-forms': hiddenLimitResetForms,
  'api-cursor-expiry-same-instant': cursorExpiryInSameInstantGroup,
  'signal-backfill': signalBackfill,
  'webhook-receiver-kill': webhookReceiverKill,
  'webhook-broker-restart': webhookBrokerRestart,
  'webhook-forged-flood': webhookForgedFlood,
  'webhook-replay-flood': webhookReplayFlood,
  'webhook-retry-pending': webhookRetryPending,
};

/** Applies one fault with the unit of its kind. */
export function applyFault(fault: PlannedFault, random: Random, context: FaultContext): Promise<FaultResult> {
  return FAULT_UNITS[fault.kind](fault, random, context);
}

/** A fault that hits a connector process or the stack (distributed mode measures its handover). */
export function isProcessFault(kind: FaultKind): boolean {
  return (
    (PROCESS_FAULTS as readonly string[]).includes(kind) ||
    kind === 'webhook-receiver-kill' ||
    kind === 'webhook-broker-restart'
  );
}
