/**
 * The checker's witness: tools/chaos/witness/read_topic.py, a reader that shares nothing with the connector
 * (librdkafka through confluent-kafka, read_committed; Avro decoded by fastavro with the registry's writer
 * schema). This module only runs it and parses its JSON lines; it reads to the end of every partition or
 * names those it could not (see the script's docstring for the contract).
 *
 * The Python is the example consumer's venv (`.cache/examples-python`, built by .ci/run's python_example
 * step from examples/python-consumer/requirements.txt). Without it the checker fails and says how to build
 * it: there is no fallback to a kafkajs reader.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { PartitionRead } from './judge.js';

const SCRIPT = join('tools', 'chaos', 'witness', 'read_topic.py');

/** The repository root: the nearest folder above this module holding the script (source or dist). */
function repositoryRoot(): string {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, SCRIPT))) return dir;
    if (dirname(dir) === dir)
      throw new Error(`the chaos witness script ${SCRIPT} is not in any folder above ${import.meta.dirname}`);
  }
}

export const BUILD_VENV_HINT =
  'build it as .ci/run does: python3 -m venv .cache/examples-python && ' +
  '.cache/examples-python/bin/pip install -r examples/python-consumer/requirements.txt';

/** The witness's Python: the example consumer's venv. Throws, saying how to build it, when it is absent. */
export function witnessPython(root = repositoryRoot()): string {
  const python = resolve(root, '.cache', 'examples-python', 'bin', 'python');
  if (!existsSync(python))
    throw new Error(
      `the chaos checker's witness needs Python with confluent-kafka; ${python} is missing: ${BUILD_VENV_HINT}`,
    );
  return python;
}

export interface WitnessLine {
  partition: number;
  offset: number;
  /** The record's Kafka timestamp (ms), null when it has none. */
  timestamp?: number | null;
  key: string | null;
  keyBase64: string | null;
  schemaId?: number | null;
  /** The record's calls-connector.source.signal header (a backfill's re-read); null when it has none. */
  signal?: string | null;
  /** The decoded Avro record (decode avro), the UTF-8 text (decode text), null for a tombstone. */
  value?: unknown;
}

export interface WitnessSummary {
  topicExists: boolean;
  partitions: PartitionRead[];
  elapsedMs: number;
}

export interface WitnessRead {
  brokers: string;
  topic: string;
  decode: 'avro' | 'text' | 'none';
  registryUrl?: string;
  /** Time to read every partition to its end; past it the summary names those not read to it. */
  timeoutMs?: number;
}

/**
 * Runs the witness over one topic, calling `each` per committed record in each partition's offset order, and
 * resolves with its summary (partitions not read to their end have reachedEnd false). Rejects when the witness
 * cannot run or fails (its stderr in the message).
 */
export async function readWithWitness(
  read: WitnessRead,
  each: (line: WitnessLine) => void,
): Promise<WitnessSummary> {
  const root = repositoryRoot();
  const args = [
    join(root, SCRIPT),
    '--brokers',
    read.brokers,
    '--topic',
    read.topic,
    '--decode',
    read.decode,
    '--timeout-s',
    String((read.timeoutMs ?? 180_000) / 1000),
    ...(read.registryUrl === undefined ? [] : ['--registry-url', read.registryUrl]),
  ];
  const child = spawn(witnessPython(root), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr.push(chunk);
    if (stderr.length > 200) stderr.shift();
  });
  const exited = new Promise<number | string>((done, fail) => {
    child.once('error', fail);
    child.once('close', (code, signal) => done(code ?? signal ?? 'unknown'));
  });
  let summary: WitnessSummary | null = null;
  let failure: Error | null = null;
  for await (const text of createInterface({ input: child.stdout, crlfDelay: Infinity })) {
    if (text.trim() === '' || failure !== null) continue;
    try {
      const parsed = JSON.parse(text) as WitnessLine | { summary: WitnessSummary };
      if ('summary' in parsed) summary = parsed.summary;
      else each(parsed);
    } catch (error) {
      // The first failure ends the read: the witness is stopped, the rest of its output drained unread.
      failure = error instanceof Error ? error : new Error(String(error));
      child.kill('SIGTERM');
    }
  }
  const status = await exited;
  if (failure !== null) throw failure;
  // 2: read, but some partition not to its end (the summary says which; the judge reports it).
  if ((status === 0 || status === 2) && summary !== null) return summary;
  throw new Error(
    `the chaos witness failed reading ${read.topic} (exit ${status}): ${stderr.join('').trim().slice(-2000) || 'no output'}`,
  );
}
