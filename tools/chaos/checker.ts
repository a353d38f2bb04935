/**
 * The independent checker of a chaos run. It shares no code with the connector (src/) and no Kafka client
 * with it: its witness (witness.ts, a librdkafka reader in Python) reads what the connector published
 * (read_committed, every partition from its beginning to its end), decoding each value by the schema id it
 * carries; the checker compares that with the sandbox's truth, read through the sandbox's admin API, and with
 * the history of every version the driver made the sandbox hold. The rules are pure functions in judge.ts.
 *
 * A version is identified by (uid, updatedAt in ms). Checks, each a count plus a few samples:
 * - lost: a call's current version (the truth after the run) was never published;
 * - duplicated: a version published more than once (must be 0 in exactly-once mode, counted otherwise);
 * - regressions: per uid, in a partition's offset order, a version older than one published before it;
 * - unlisted: a published uid the listing never returned (third-party, unrepresentable, unknown);
 * - unknownVersion: a published version the sandbox never held (a record mixing two versions);
 * - privacyLeaks: a customer number published for a version that was private, or not enriched;
 * - enrichmentMismatches: an enriched field (or the listed fields) unequal to that version's truth;
 * - offsetViolations: a stored offset that is not at the end of its location (cursor left, watermark not the
 *   newest updatedAt) or behind a record published for its location;
 * - reReadMissing: a backfill signal the run sent left a current version of its range without a re-read record;
 * - unreadPartitions: a partition of the calls, offsets or dead-letter topic the witness did not read to its
 *   end (never judged, so a violation);
 * - secretLeaks: a log line holding the client secret, the token-store key or an access/refresh token.
 */
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'undici';
import {
  asPublished,
  finding,
  findDuplicates,
  findLost,
  findOffsetViolations,
  findReReadGaps,
  findRegressions,
  findUnreadPartitions,
  judgeRecords,
  knownVersions,
  note,
  type Backfill,
  type Finding,
  type PartitionRead,
  type PublishedRecord,
  type StoredOffset,
  type TopicRead,
  type TruthCall,
} from './judge.js';
import { readWithWitness, type WitnessSummary } from './witness.js';

export interface CheckInput {
  brokers: string;
  registryUrl: string;
  sandboxUrl: string;
  sandboxCaFile: string;
  topic: string;
  offsetsTopic: string;
  dlqTopic: string;
  connectorName: string;
  exactlyOnce: boolean;
  /** JSON lines of TruthCall: every version the sandbox held during the run. */
  historyFile: string;
  logFiles: string[];
  /** Exact strings that must never be logged (client secret, store key in its encodings). */
  secrets: string[];
  /** The backfill signals the run sent: each range must be published once more (reReadMissing). */
  backfills?: readonly Backfill[];
  /** Called with each committed record of the calls topic as the witness reads it (the freshness rule's input). */
  onRecord?: (record: PublishedRecord) => void;
}

export interface CheckResult {
  recordsChecked: number;
  versionsPublished: number;
  currentVersions: number;
  deadLetters: number;
  unenriched: number;
  lost: Finding;
  duplicated: Finding;
  /** Records a backfill signal re-read (its header), and the current versions of its range it did not. */
  reReads: number;
  reReadMissing: Finding;
  regressions: Finding;
  unlisted: Finding;
  unknownVersion: Finding;
  privacyLeaks: Finding;
  enrichmentMismatches: Finding;
  offsetViolations: Finding;
  unreadPartitions: Finding;
  secretLeaks: Finding;
  /** Log files that could not be read: their lines were never searched for secrets. */
  unreadLogs: Finding;
  logLinesScanned: number;
  /** What the witness read, per topic: "partitions read to their end / partitions, in N s". */
  witness: Record<string, string>;
  /** Human-readable violations; empty when the run passed. */
  violations: string[];
}

/** Access and refresh tokens of the sandbox, whoever issued them. */
const TOKEN_PATTERN = /sbx_(?:at|rt)_[A-Za-z0-9_-]{16,}/;

/** What the search of the run's logs found. */
export interface LogScan {
  /** Lines searched (empty ones aside). */
  lines: number;
  leaks: Finding;
  /** Log files that could not be read: their lines were never searched. */
  unread: Finding;
}

/**
 * Searches every log file for the run's secrets (those of 8 characters or more) and for tokens. A log that
 * cannot be read is noted in `unread`, never skipped in silence.
 */
export async function scanLogs(logFiles: readonly string[], allSecrets: readonly string[]): Promise<LogScan> {
  const secrets = allSecrets.filter((s) => s.length >= 8);
  const scan: LogScan = { lines: 0, leaks: finding(), unread: finding() };
  for (const file of logFiles) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      note(scan.unread, `${file}: ${(error as Error).message}`);
      continue;
    }
    text.split('\n').forEach((line, i) => {
      if (line === '') return;
      scan.lines++;
      const secret = secrets.findIndex((s) => line.includes(s));
      if (secret >= 0) note(scan.leaks, `${file}:${i + 1}: secret #${secret + 1} of the run`);
      else if (TOKEN_PATTERN.test(line)) note(scan.leaks, `${file}:${i + 1}: an OAuth token`);
    });
  }
  return scan;
}

/**
 * The violations of a log scan: a secret or token logged, a log that could not be read, or no line read at all
 * (wrong paths, empty logs: "0 secrets" would then prove nothing).
 */
export function logScanViolations(scan: LogScan, files: number): string[] {
  const out: string[] = [];
  if (scan.leaks.count > 0)
    out.push(`secrets in logs: ${scan.leaks.count} (e.g. ${scan.leaks.samples.join('; ')})`);
  if (scan.unread.count > 0)
    out.push(
      `log files that could not be searched for secrets: ${scan.unread.count} (e.g. ${scan.unread.samples.join('; ')})`,
    );
  if (scan.lines === 0) out.push(`secrets in logs: no log line was searched (${files} files given)`);
  return out;
}

async function adminGet<T>(input: CheckInput, dispatcher: Agent, path: string): Promise<T> {
  const response = await request(`${input.sandboxUrl}${path}`, { dispatcher });
  if (response.statusCode !== 200)
    throw new Error(`sandbox admin ${path} answered ${response.statusCode}: ${await response.body.text()}`);
  return (await response.body.json()) as T;
}

/** The sandbox's current truth: every listable call of every location. */
async function readTruth(input: CheckInput): Promise<Map<string, TruthCall[]>> {
  const dispatcher = new Agent({ connect: { ca: await readFile(input.sandboxCaFile, 'utf8') } });
  try {
    const { data: locations } = await adminGet<{ data: string[] }>(input, dispatcher, '/_sandbox/locations');
    const truth = new Map<string, TruthCall[]>();
    for (const location of locations) {
      const { data } = await adminGet<{ data: TruthCall[] }>(
        input,
        dispatcher,
        `/_sandbox/truth?locationUid=${encodeURIComponent(location)}`,
      );
      truth.set(location, data);
    }
    return truth;
  } finally {
    await dispatcher.close();
  }
}

const readSummary = (partitions: readonly PartitionRead[], elapsedMs: number): string =>
  `${partitions.filter((p) => p.reachedEnd).length}/${partitions.length} partitions read to their end in ` +
  `${(elapsedMs / 1000).toFixed(1)} s`;

export async function check(input: CheckInput): Promise<CheckResult> {
  const truth = await readTruth(input);
  // The history is the truth of every version held: missing, every published older version would be "unknown".
  const history = await readFile(input.historyFile, 'utf8');
  const held: TruthCall[] = history
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as TruthCall);
  for (const calls of truth.values()) held.push(...calls);
  const { known, listedUids } = knownVersions(held);

  const witness: Record<string, string> = {};
  const reads: TopicRead[] = [];
  const readWhole = (topic: string, summary: WitnessSummary): void => {
    witness[topic] = readSummary(summary.partitions, summary.elapsedMs);
    reads.push({ topic, partitions: summary.partitions });
  };

  const records: PublishedRecord[] = [];
  const calls = await readWithWitness(
    { brokers: input.brokers, topic: input.topic, decode: 'avro', registryUrl: input.registryUrl },
    (line) => {
      if (line.value === null || line.value === undefined) return;
      const record: PublishedRecord = {
        partition: line.partition,
        offset: line.offset,
        timestamp: line.timestamp ?? null,
        key: line.key,
        call: asPublished(line.value),
        reRead: line.signal ?? null,
      };
      records.push(record);
      input.onRecord?.(record);
    },
  );
  readWhole(input.topic, calls);

  const offsets = new Map<string, StoredOffset | null>();
  const stored = await readWithWitness(
    { brokers: input.brokers, topic: input.offsetsTopic, decode: 'text' },
    (line) => {
      offsets.set(
        line.key ?? '',
        typeof line.value === 'string' ? (JSON.parse(line.value) as StoredOffset) : null,
      );
    },
  );
  readWhole(input.offsetsTopic, stored);

  let deadLetters = 0;
  const dlq = await readWithWitness({ brokers: input.brokers, topic: input.dlqTopic, decode: 'none' }, () => {
    deadLetters++;
  });
  readWhole(input.dlqTopic, dlq);

  const judged = judgeRecords(records, known, listedUids);
  const { duplicated, versions } = findDuplicates(records);
  const reRead = findReReadGaps(truth, records, input.backfills ?? []);
  const logs = await scanLogs(input.logFiles, input.secrets);
  const result: CheckResult = {
    recordsChecked: records.length,
    versionsPublished: versions,
    currentVersions: [...truth.values()].reduce((n, c) => n + c.length, 0),
    deadLetters,
    unenriched: judged.unenriched,
    lost: findLost(truth, records),
    duplicated,
    reReads: reRead.reReads,
    reReadMissing: reRead.missing,
    regressions: findRegressions(records),
    unlisted: judged.unlisted,
    unknownVersion: judged.unknownVersion,
    privacyLeaks: judged.privacyLeaks,
    enrichmentMismatches: judged.enrichmentMismatches,
    offsetViolations: findOffsetViolations(truth, offsets, records, input.connectorName),
    unreadPartitions: findUnreadPartitions(reads),
    secretLeaks: logs.leaks,
    unreadLogs: logs.unread,
    logLinesScanned: logs.lines,
    witness,
    violations: [],
  };

  const must = (name: string, f: Finding): void => {
    if (f.count > 0) result.violations.push(`${name}: ${f.count} (e.g. ${f.samples.join('; ')})`);
  };
  must('partitions the witness did not read to their end', result.unreadPartitions);
  must('lost', result.lost);
  if (input.exactlyOnce) must('duplicated', result.duplicated);
  must('current versions of a backfill range not published again', result.reReadMissing);
  must('versions going backwards per uid', result.regressions);
  must('unlisted calls published', result.unlisted);
  must('versions the sandbox never held', result.unknownVersion);
  must('customer numbers leaked', result.privacyLeaks);
  must('enriched fields unequal to the truth', result.enrichmentMismatches);
  must('offsets inconsistent with what was published', result.offsetViolations);
  result.violations.push(...logScanViolations(logs, input.logFiles.length));
  return result;
}
