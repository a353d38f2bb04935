/**
 * The independent checker of a chaos run. It shares no code with the connector (src/): it reads what the
 * connector published with its own Kafka consumer (read_committed, from the beginning), decodes every record
 * through the schema registry by the schema id in the record, and compares with the sandbox's truth, read
 * through the sandbox's admin API, and with the history of every version the driver made the sandbox hold.
 *
 * A version is identified by (uid, updatedAt in ms). Checks, each a count plus a few samples:
 * - lost: a call's current version (the truth after the run) was never published;
 * - duplicated: a version published more than once (must be 0 in exactly-once mode, counted otherwise);
 * - unlisted: a published uid the listing never returned (third-party, unrepresentable, unknown);
 * - unknownVersion: a published version the sandbox never held (a record mixing two versions);
 * - privacyLeaks: a customer number published for a version that was private, or not enriched;
 * - enrichmentMismatches: an enriched field (or the listed fields) unequal to that version's truth;
 * - offsetViolations: a stored offset that is not at the end of its location (cursor left, watermark not the
 *   newest updatedAt) or behind a record published for its location;
 * - secretLeaks: a log line holding the client secret, the token-store key or an access/refresh token.
 */
import { readFile } from 'node:fs/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { Agent, request } from 'undici';

/** A call as the sandbox's admin API and the driver's history hold it (every field, ISO times). */
export interface TruthCall {
  uid: string;
  locationUid: string;
  updatedAt: string;
  locationPhoneNumber: string;
  customerPhoneNumber: string | null;
  startedAt: string;
  endedAt: string;
  isPrivate: boolean;
  conversationUid: string | null;
}

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
}

export interface Finding {
  count: number;
  samples: string[];
}

export interface CheckResult {
  recordsChecked: number;
  versionsPublished: number;
  currentVersions: number;
  deadLetters: number;
  unenriched: number;
  lost: Finding;
  duplicated: Finding;
  unlisted: Finding;
  unknownVersion: Finding;
  privacyLeaks: Finding;
  enrichmentMismatches: Finding;
  offsetViolations: Finding;
  secretLeaks: Finding;
  logLinesScanned: number;
  /** Human-readable violations; empty when the run passed. */
  violations: string[];
}

/** A decoded value of the Call schema, as the checker reads it (only the fields it checks). */
export interface PublishedCall {
  uid: string;
  locationUid: string;
  updatedAt: number;
  updatedAtIso: string;
  locationPhoneNumber: string | null;
  customerPhoneNumber: string | null;
  startedAt: number | null;
  endedAt: number | null;
  isPrivate: boolean | null;
  conversationUid: string | null;
  enriched: boolean;
  ingestedAt: number | null;
}

/** Access and refresh tokens of the sandbox, whoever issued them. */
const TOKEN_PATTERN = /sbx_(?:at|rt)_[A-Za-z0-9_-]{16,}/;
const SAMPLES = 5;

function finding(): Finding {
  return { count: 0, samples: [] };
}

function note(f: Finding, sample: string): void {
  f.count++;
  if (f.samples.length < SAMPLES) f.samples.push(sample);
}

const versionKey = (uid: string, updatedAtMs: number): string => `${uid}@${updatedAtMs}`;

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

/**
 * Every committed message of a topic, from the beginning, with a consumer group of its own. The end is the
 * high watermark read first (the run has settled, nothing writes); transaction markers occupy offsets no
 * message reaches, so a partition also ends after a few quiet seconds.
 */
export async function readTopic(
  brokers: string,
  topic: string,
  each: (message: KafkaMessage, partition: number) => Promise<void> | void,
  quietMs = 6000,
): Promise<number> {
  const kafka = new Kafka({
    clientId: 'calls-chaos-checker',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  let high: Map<number, bigint>;
  try {
    const topics = await admin.listTopics();
    if (!topics.includes(topic)) return 0;
    high = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)] as const));
  } finally {
    await admin.disconnect();
  }
  const pending = new Set([...high].filter(([, h]) => h > 0n).map(([p]) => p));
  if (pending.size === 0) return 0;
  const consumer = kafka.consumer({
    groupId: `calls-chaos-checker-${process.pid}-${Date.now()}`,
    readUncommitted: false,
    maxBytes: 16 * 1024 * 1024,
  });
  let count = 0;
  let lastMessageAt = Date.now();
  let failure: Error | null = null;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message, partition }) => {
        try {
          await each(message, partition);
        } catch (error) {
          failure ??= error instanceof Error ? error : new Error(String(error));
        }
        count++;
        lastMessageAt = Date.now();
        if (BigInt(message.offset) + 1n >= (high.get(partition) ?? 0n)) pending.delete(partition);
      },
    });
    while (pending.size > 0 && Date.now() - lastMessageAt < quietMs && failure === null)
      await new Promise((r) => setTimeout(r, 200));
  } finally {
    await consumer.disconnect();
  }
  // Set by the callback above (the compiler cannot see it): the first decoding failure, if any.
  const firstFailure = failure as Error | null;
  if (firstFailure !== null) throw firstFailure;
  return count;
}

export function asPublished(value: unknown): PublishedCall {
  const v = value as Record<string, unknown>;
  const num = (x: unknown): number | null => (typeof x === 'number' ? x : x === null ? null : Number(x));
  return {
    uid: String(v.uid),
    locationUid: String(v.locationUid),
    updatedAt: Number(v.updatedAt),
    updatedAtIso: String(v.updatedAtIso),
    locationPhoneNumber: (v.locationPhoneNumber as string | null) ?? null,
    customerPhoneNumber: (v.customerPhoneNumber as string | null) ?? null,
    startedAt: num(v.startedAt ?? null),
    endedAt: num(v.endedAt ?? null),
    isPrivate: (v.isPrivate as boolean | null) ?? null,
    conversationUid: (v.conversationUid as string | null) ?? null,
    enriched: v.enriched === true,
    ingestedAt: num(v.ingestedAt ?? null),
  };
}

/** The fields of a published record that differ from the truth of its version (empty: it is right). */
export function compareVersion(record: PublishedCall, truth: TruthCall): string[] {
  const differences: string[] = [];
  const micros = (iso: string): number => Date.parse(iso) * 1000;
  if (record.locationUid !== truth.locationUid) differences.push('locationUid');
  if (record.locationPhoneNumber !== truth.locationPhoneNumber) differences.push('locationPhoneNumber');
  if (record.enriched) {
    if (record.startedAt !== micros(truth.startedAt)) differences.push('startedAt');
    if (record.endedAt !== micros(truth.endedAt)) differences.push('endedAt');
    if (record.isPrivate !== truth.isPrivate) differences.push('isPrivate');
    if (record.conversationUid !== truth.conversationUid) differences.push('conversationUid');
    if (!truth.isPrivate && record.customerPhoneNumber !== truth.customerPhoneNumber)
      differences.push('customerPhoneNumber');
  } else if (record.startedAt !== null || record.isPrivate !== null)
    differences.push('unenriched with values');
  return differences;
}

/** A customer number is published only for a version known (enriched) to be public. */
export function leaksNumber(record: PublishedCall, version: TruthCall): boolean {
  return record.customerPhoneNumber !== null && (version.isPrivate || !record.enriched);
}

async function scanLogs(input: CheckInput, leaks: Finding): Promise<number> {
  const secrets = input.secrets.filter((s) => s.length >= 8);
  let lines = 0;
  for (const file of input.logFiles) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    text.split('\n').forEach((line, i) => {
      lines++;
      const secret = secrets.findIndex((s) => line.includes(s));
      if (secret >= 0) note(leaks, `${file}:${i + 1}: secret #${secret + 1} of the run`);
      else if (TOKEN_PATTERN.test(line)) note(leaks, `${file}:${i + 1}: an OAuth token`);
    });
  }
  return lines;
}

export async function check(input: CheckInput): Promise<CheckResult> {
  const truth = await readTruth(input);
  const known = new Map<string, TruthCall>();
  const listedUids = new Set<string>();
  const history = await readFile(input.historyFile, 'utf8').catch(() => '');
  const remember = (call: TruthCall): void => {
    known.set(versionKey(call.uid, Date.parse(call.updatedAt)), call);
    listedUids.add(call.uid);
  };
  for (const line of history.split('\n')) if (line.trim() !== '') remember(JSON.parse(line) as TruthCall);
  for (const calls of truth.values()) calls.forEach(remember);

  const result: CheckResult = {
    recordsChecked: 0,
    versionsPublished: 0,
    currentVersions: 0,
    deadLetters: 0,
    unenriched: 0,
    lost: finding(),
    duplicated: finding(),
    unlisted: finding(),
    unknownVersion: finding(),
    privacyLeaks: finding(),
    enrichmentMismatches: finding(),
    offsetViolations: finding(),
    secretLeaks: finding(),
    logLinesScanned: 0,
    violations: [],
  };

  const registry = new SchemaRegistry({ host: input.registryUrl });
  const published = new Map<string, number>();
  /** When each copy of a version was encoded (ingestedAt): duplicates are reported with their moments. */
  const copies = new Map<string, string[]>();
  const newestPublished = new Map<string, number>();
  result.recordsChecked = await readTopic(input.brokers, input.topic, async (message) => {
    if (message.value === null) return;
    const record = asPublished(await registry.decode(message.value));
    const ms = Date.parse(record.updatedAtIso);
    const key = versionKey(record.uid, ms);
    published.set(key, (published.get(key) ?? 0) + 1);
    const encodedAt = record.ingestedAt === null ? '?' : new Date(record.ingestedAt).toISOString();
    copies.set(key, [...(copies.get(key) ?? []), encodedAt]);
    newestPublished.set(record.locationUid, Math.max(newestPublished.get(record.locationUid) ?? 0, ms));
    if (message.key?.toString('utf8') !== record.uid) note(result.unknownVersion, `${key}: key differs`);
    if (!record.enriched) result.unenriched++;
    const version = known.get(key);
    if (version === undefined) {
      if (listedUids.has(record.uid)) note(result.unknownVersion, key);
      else note(result.unlisted, key);
      return;
    }
    if (leaksNumber(record, version))
      note(
        result.privacyLeaks,
        `${key}: number published (private=${version.isPrivate}, enriched=${record.enriched})`,
      );
    const differences = compareVersion(record, version);
    if (differences.length > 0) note(result.enrichmentMismatches, `${key}: ${differences.join(', ')}`);
  });
  result.versionsPublished = published.size;
  for (const [key, n] of published)
    for (let i = 1; i < n; i++)
      note(result.duplicated, `${key} (encoded at ${(copies.get(key) ?? []).join(', ')})`);

  for (const [location, calls] of truth) {
    for (const call of calls) {
      result.currentVersions++;
      if (!published.has(versionKey(call.uid, Date.parse(call.updatedAt))))
        note(result.lost, `${versionKey(call.uid, Date.parse(call.updatedAt))} (location ${location})`);
    }
  }

  const offsets = new Map<string, string | null>();
  await readTopic(input.brokers, input.offsetsTopic, (message) => {
    offsets.set(message.key?.toString('utf8') ?? '', message.value?.toString('utf8') ?? null);
  });
  for (const [location, calls] of truth) {
    const raw = offsets.get(`${input.connectorName}/${location}`);
    const newest = calls.length === 0 ? null : Math.max(...calls.map((c) => Date.parse(c.updatedAt)));
    if (raw === undefined || raw === null) {
      if (newest !== null) note(result.offsetViolations, `${location}: no stored offset`);
      continue;
    }
    const offset = JSON.parse(raw) as {
      cursor?: string | null;
      watermark?: string | null;
      history?: unknown;
    };
    if (offset.history !== undefined && offset.history !== null)
      note(result.offsetViolations, `${location}: its history lane is still stored after the run settled`);
    const watermark = offset.watermark ? Date.parse(offset.watermark) : null;
    if (offset.cursor !== null && offset.cursor !== undefined)
      note(result.offsetViolations, `${location}: a cursor is still stored after the run settled`);
    if (watermark !== newest)
      note(result.offsetViolations, `${location}: watermark ${offset.watermark} is not the newest updatedAt`);
    const newestOut = newestPublished.get(location);
    if (newestOut !== undefined && watermark !== null && newestOut > watermark)
      note(result.offsetViolations, `${location}: a record newer than the stored watermark was published`);
  }
  result.deadLetters = await readTopic(input.brokers, input.dlqTopic, () => undefined);
  result.logLinesScanned = await scanLogs(input, result.secretLeaks);

  const must = (name: string, f: Finding): void => {
    if (f.count > 0) result.violations.push(`${name}: ${f.count} (e.g. ${f.samples.join('; ')})`);
  };
  must('lost', result.lost);
  if (input.exactlyOnce) must('duplicated', result.duplicated);
  must('unlisted calls published', result.unlisted);
  must('versions the sandbox never held', result.unknownVersion);
  must('customer numbers leaked', result.privacyLeaks);
  must('enriched fields unequal to the truth', result.enrichmentMismatches);
  must('offsets inconsistent with what was published', result.offsetViolations);
  must('secrets in logs', result.secretLeaks);
  return result;
}
