/**
 * `calls-connector offsets show|reset`: inspect and reset the stored per-location offsets.
 *
 *   offsets show  --config F [--location L]   JSON object: location uid -> offset (null: none stored)
 *   offsets reset --config F --location L [--to TIME]
 *       without --to: a tombstone; the location starts over from sources[].startSince or the beginning;
 *       with --to:    the offset {since: TIME, cursor: null, watermark: null, boundary: []}, so the next
 *                     traversal lists calls updated at or after TIME.
 *   offsets reset --config F --location L --history [--to TIME]
 *       a location split into lanes (docs/sync.md "Lanes"; its offset then shows `history` beside the live
 *       lane's fields): its history lane alone starts over, from TIME or the start, the live lane and T0 as
 *       stored. A TIME at or after T0 removes the history lane (the backfill is skipped). Exit 3 when the
 *       location is not split.
 *
 * `reset` refuses while an instance of the connector runs (as KIP-875 requires a stopped connector): a running
 * instance keeps its offsets in memory and would overwrite the reset with its next page. Kafka says whether one
 * runs: every running instance is a member of the consumer group `<connector.name>-instances`
 * (src/kafka/group/instance-presence.ts).
 * Exit codes: 0 done; 2 bad arguments or config; 3 `show --location` with no stored offset, or `reset` while
 * an instance runs; 1 Kafka failure.
 */
import type { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import type { ConnectorConfig } from '../../config/schema.js';
import { createKafka } from '../../kafka/client/kafkajs-client.js';
import {
  PRESENCE_SESSION_TIMEOUT_MS,
  presenceGroupId,
  runningInstances,
} from '../../kafka/group/instance-presence.js';
import { KafkaOffsetStore } from '../../kafka/offsets/kafka-offset-store.js';
import { writeLocationOffset } from '../../kafka/offsets/offset-writer.js';
import { ensureConnectorTopics, topicExists } from '../../kafka/topics/topics.js';
import { createLogger } from '../../logging/logger.js';
import { resetHistory } from '../../sync/lanes/lanes.js';
import type { LocationOffset } from '../../sync/model.js';
import { parseInstant } from '../../time/instant.js';
import { talkingToKafka } from '../talking-to-kafka.js';
import { ExitCode } from '../../errors/exit-codes.js';
import { examples } from '../help-text.js';

const LOCATION_UID = /^[0-9a-fA-F-]{36}$/;

function kafkaFor(config: ConnectorConfig) {
  const logger = createLogger({
    // kafkajs' retried errors are noise for a one-shot command: only errors, unless debugging.
    level: ['debug', 'trace'].includes(config.logging.level) ? config.logging.level : 'error',
    format: 'json',
    destination: process.stderr,
  });
  return createKafka({ config: config.kafka, connectorName: config.connector.name, logger });
}

function usage(message: string): number {
  process.stderr.write(`calls-connector offsets: ${message}\n`);
  return ExitCode.USAGE;
}

function offsetStoreFor(config: ConnectorConfig, kafka: ReturnType<typeof kafkaFor>): KafkaOffsetStore {
  return new KafkaOffsetStore({
    kafka,
    topic: config.kafka.offsetsTopic,
    connectorName: config.connector.name,
    groupIdPrefix: `${config.kafka.clientId ?? config.connector.name}-offsets-reader`,
    loadTimeoutMs: config.kafka.offsetsLoadTimeoutMs,
  });
}

export async function showOffsets(configFile: string, location: string | undefined): Promise<number> {
  if (location !== undefined && !LOCATION_UID.test(location))
    return usage(`--location must be a location uid (UUID), got "${location}"`);
  const config = await loadConfig(configFile);
  const kafka = kafkaFor(config);
  const store = offsetStoreFor(config, kafka);
  // No offsets topic yet (the connector creates it at its first start): nothing is stored.
  const stored = (await topicExists(kafka, config.kafka.offsetsTopic))
    ? await talkingToKafka(() => store.loadAll())
    : new Map<string, LocationOffset>();
  const shown: Record<string, LocationOffset | null> = {};
  if (location !== undefined) {
    shown[location] = stored.get(location) ?? null;
  } else {
    for (const uid of config.sources.flatMap((s) => s.locations)) shown[uid] = stored.get(uid) ?? null;
    for (const [uid, offset] of stored) shown[uid] = offset;
  }
  process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
  return location !== undefined && shown[location] === null ? ExitCode.NOT_READY : ExitCode.OK;
}

export async function resetOffset(
  configFile: string,
  location: string,
  to: string | undefined,
  options: { history?: boolean } = {},
): Promise<number> {
  if (!LOCATION_UID.test(location))
    return usage(`--location must be a location uid (UUID), got "${location}"`);
  if (to !== undefined && parseInstant(to) === null)
    return usage(`--to must be an RFC 3339 date-time with an offset, e.g. 2024-05-01T00:00:00Z; got "${to}"`);
  const config = await loadConfig(configFile);
  const kafka = kafkaFor(config);
  const running = await talkingToKafka(() => runningInstances(kafka, config.connector.name));
  if (running.length > 0) {
    process.stderr.write(
      `calls-connector offsets: refusing to reset: ${running.length} instance(s) of connector ${config.connector.name} are running ` +
        `(${running.map((r) => `${r.clientId}@${r.clientHost}`).join(', ')}; members of consumer group ${presenceGroupId(config.connector.name)}). ` +
        `Stop them first: a running instance would overwrite the reset with its next page. ` +
        `An instance that crashed leaves the group within ${PRESENCE_SESSION_TIMEOUT_MS / 1000} s. ` +
        `To reset while they run, send the running connector a signal: calls-connector signal reset --config ${configFile} --location ${location}${to === undefined ? '' : ` --to ${to}`} --wait\n`,
    );
    return ExitCode.NOT_READY;
  }
  if (options.history === true) return resetHistoryLane(config, kafka, location, to ?? null);
  const offset: LocationOffset | null =
    to === undefined ? null : { since: to, cursor: null, watermark: null, boundary: [] };
  const target = {
    topic: config.kafka.offsetsTopic,
    connectorName: config.connector.name,
    locationUid: location,
  };
  if (!(await topicExists(kafka, config.kafka.offsetsTopic))) {
    if (offset === null) {
      process.stdout.write(
        `no offsets topic ${config.kafka.offsetsTopic} yet: nothing stored, nothing to reset\n`,
      );
      return ExitCode.OK;
    }
    await ensureConnectorTopics(kafka, config.kafka); // as the connector's first start would
  }
  await talkingToKafka(() => writeLocationOffset(kafka, target, offset));
  process.stdout.write(
    to === undefined
      ? `offset of ${location} removed: it starts over from ${config.sources.find((s) => s.locations.includes(location))?.startSince ?? 'the beginning'}\n`
      : `offset of ${location} set: the next traversal starts at since=${to}\n`,
  );
  return ExitCode.OK;
}

/** `reset --history`: the stored offset with its history lane started over (lanes.ts, resetHistory). */
async function resetHistoryLane(
  config: ConnectorConfig,
  kafka: ReturnType<typeof kafkaFor>,
  location: string,
  to: string | null,
): Promise<number> {
  const stored = (await topicExists(kafka, config.kafka.offsetsTopic))
    ? await talkingToKafka(() => offsetStoreFor(config, kafka).loadLocations([location]))
    : new Map<string, LocationOffset>();
  const current = stored.get(location);
  const offset = current === undefined ? null : resetHistory(current, to);
  if (current === undefined || offset === null) {
    process.stderr.write(
      `calls-connector offsets: location ${location} has no history lane (it is not split: nothing to reset)\n`,
    );
    return ExitCode.NOT_READY;
  }
  const target = {
    topic: config.kafka.offsetsTopic,
    connectorName: config.connector.name,
    locationUid: location,
  };
  await talkingToKafka(() => writeLocationOffset(kafka, target, offset));
  process.stdout.write(
    offset.history === undefined
      ? `history lane of ${location} removed: calls before ${current.history?.until} not yet read are skipped\n`
      : `history lane of ${location} reset: it reads again from ${to ?? config.sources.find((s) => s.locations.includes(location))?.startSince ?? 'the beginning'} up to ${offset.history.until}\n`,
  );
  return ExitCode.OK;
}

export function register(program: Command): void {
  const offsets = program
    .command('offsets')
    .description(
      'Show or reset the stored per-location offsets (stop the connector before a reset; while it runs, use `signal reset`).',
    )
    .addHelpText(
      'after',
      examples(
        'calls-connector offsets show --config connector.yaml',
        'calls-connector offsets reset --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11',
      ),
    );
  offsets
    .command('show')
    .description('Print the stored offsets as JSON (location uid -> offset; null when none is stored).')
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .option('-l, --location <uid>', 'only this location (exit 3 when it has no stored offset)')
    .addHelpText(
      'after',
      examples(
        'calls-connector offsets show --config connector.yaml',
        'calls-connector offsets show --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11',
      ),
    )
    .action(async (options: { config: string; location?: string }) => {
      process.exitCode = await showOffsets(options.config, options.location);
    });
  offsets
    .command('reset')
    .description(
      'Remove the offset of one location (tombstone), or set it to start at --to. Refuses while the connector runs.',
    )
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .requiredOption('-l, --location <uid>', 'the location to reset')
    .option(
      '--to <time>',
      'RFC 3339 date-time: start the next traversal at since=<time> instead of starting over',
    )
    .option(
      '--history',
      'a location split into lanes: start its history lane alone over (from --to, or the start); the live lane is kept',
    )
    .addHelpText(
      'after',
      examples(
        'calls-connector offsets reset --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11',
        'calls-connector offsets reset --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11 --to 2024-05-01T00:00:00Z',
        'calls-connector offsets reset --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11 --history',
      ),
    )
    .action(async (options: { config: string; location: string; to?: string; history?: boolean }) => {
      process.exitCode = await resetOffset(options.config, options.location, options.to, {
        history: options.history === true,
      });
    });
}
