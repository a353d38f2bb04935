/**
 * The checker's phase of a run: everything it needs of the run (the stack's endpoints, the run's topics, the
 * version history, every log file to search for secrets, and the secrets themselves) handed to checker.ts,
 * which shares no code with the driver's observations.
 */
import { join } from 'node:path';
import { check, type CheckResult } from './checker.js';
import type { Backfill, PublishedRecord } from './judge.js';
import { CONNECTOR_NAME, PORTS, TOPICS } from './run-names.js';
import type { StackEndpoints } from './stack.js';

export interface FinalCheckInputs {
  endpoints: StackEndpoints;
  runDir: string;
  exactlyOnce: boolean;
  historyFile: string;
  /** Every connector process's log and every `auth login`'s. */
  logFiles: string[];
  secrets: { clientSecret: string; storeKey: Buffer };
  say: (message: string) => void;
  /** The backfill signals the run sent (checker.ts CheckInput.backfills). */
  backfills: readonly Backfill[];
  /** Each committed record of the calls topic as the witness reads it (checker.ts CheckInput.onRecord). */
  onRecord?: (record: PublishedRecord) => void;
}

export async function checkPublished(inputs: FinalCheckInputs): Promise<CheckResult> {
  inputs.say('checker: reading the calls topic (read_committed) and comparing with the sandbox truth');
  return check({
    brokers: inputs.endpoints.brokers,
    registryUrl: inputs.endpoints.registryUrl,
    sandboxUrl: `https://127.0.0.1:${PORTS.sandbox}`,
    sandboxCaFile: join(inputs.runDir, 'sandbox-ca.pem'),
    topic: TOPICS.calls,
    offsetsTopic: TOPICS.offsets,
    dlqTopic: TOPICS.dlq,
    connectorName: CONNECTOR_NAME,
    exactlyOnce: inputs.exactlyOnce,
    historyFile: inputs.historyFile,
    logFiles: inputs.logFiles,
    secrets: [
      inputs.secrets.clientSecret,
      inputs.secrets.storeKey.toString('base64'),
      inputs.secrets.storeKey.toString('hex'),
    ],
    backfills: inputs.backfills,
    ...(inputs.onRecord !== undefined && { onRecord: inputs.onRecord }),
  });
}
