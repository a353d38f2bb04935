/**
 * Start-up step 7 (webhooks.enabled): the webhook receiver, started last so that it takes nudges only once
 * everything they could reach is running, and closed first. A taken nudge makes each of its locations' live
 * poll due now through the scheduler's nudge (webhooks/scheduler-nudges.ts); a location this instance does not
 * schedule is counted and acknowledged (docs/webhooks.md).
 *
 * `webhookDeliveries` comes before the locations are built: the uid index and the delivery ledger it makes are
 * fed by the sinks (webhooks/published-calls.ts) from the first page on; `wire` then joins them to the scheduler.
 * Wiring only: the signing secrets (webhooks/signature/signing-secrets.ts), the TLS files (webhooks/tls-files.ts)
 * and every NudgeSink (webhooks/nudge-sink.ts, webhooks/scheduler-nudges.ts) are webhooks/' own.
 */
import type { KafkaClient } from '../../kafka/client/port.js';
import { kafkaNudgeReader, type NudgeTopicReader } from '../../kafka/nudges/nudge-reader.js';
import {
  ensureNudgeTopic,
  NUDGE_RETENTION_MS,
  NudgeTopicWriter,
  nudgeTopicName,
} from '../../kafka/nudges/nudge-topic.js';
import type { NamedReadinessCheck, Readiness } from '../../ops/readiness.js';
import { primeWebhookMetrics } from '../../metrics/webhook-metrics.js';
import { DeliveryLedger } from '../../webhooks/delivery-ledger.js';
import { locationDirectory } from '../../webhooks/location-directory.js';
import {
  loggingNudgeSink,
  refusedWhileStandingBy,
  relayedNudgeSink,
  type NudgeSink,
  type SharedReplayKey,
} from '../../webhooks/nudge-sink.js';
import { WebhookReceiver, type WebhookReceiverAddress } from '../../webhooks/receiver.js';
import { publishedCallsFeed, type PublishedCalls } from '../../webhooks/published-calls.js';
import { ReplayWindow, replayKeepMs } from '../../webhooks/replay-window.js';
import { ownedLocationNudge, schedulerNudgeSink, type NudgeTarget } from '../../webhooks/scheduler-nudges.js';
import { signatureRule } from '../../webhooks/signature/signing-secrets.js';
import { readTlsFiles } from '../../webhooks/tls-files.js';
import { LruUidLocations, type UidLocationIndex } from '../../webhooks/uid-locations.js';
import type { StartContext } from './context.js';

export interface Webhooks {
  address: WebhookReceiverAddress;
  /** The index of published uids the receiver resolves locations with. */
  uidLocations: UidLocationIndex;
}

/** What the receiver nudges, the uid index the sinks feed, and the replay window the nudge reader feeds. */
export interface WebhookWiring {
  sink: NudgeSink;
  uidLocations: UidLocationIndex;
  replay: ReplayWindow;
}

/** The webhook side's parts made before the locations (null when webhooks are off). */
export interface WebhookDeliveries {
  /** For the sinks: every stored page's calls (buildLocations' `published`). */
  published: PublishedCalls;
  ledger: DeliveryLedger;
  /**
   * The receiver's wiring once the scheduler exists. `standingBy` (single mode): while it says true, deliveries
   * are refused (503 with Retry-After) so that the sender retries them onto the writer; a ready standby is
   * behind the same Service as the writer.
   */
  wire(target: NudgeTarget, standingBy?: () => boolean): WebhookWiring;
  /** Distributed mode: what a nudge read from the nudge topic does on this instance (its own locations only). */
  owned(target: NudgeTarget): (nudge: { uid: string; location: string }) => void;
  /**
   * Distributed mode: a replay key read from the nudge topic (a delivery taken by any instance) enters this
   * instance's replay window, so a replay of it sent here is refused.
   */
  sharedReplayKeys(replay: SharedReplayKey): void;
}

export function webhookDeliveries(ctx: StartContext): WebhookDeliveries | null {
  const { config, metrics, clock } = ctx;
  const settings = config.webhooks;
  if (!settings.enabled) return null;
  const uidLocations = new LruUidLocations(settings.uidIndexSize);
  const replay = replayWindow(settings);
  const ledger = new DeliveryLedger({
    clock,
    graceMs: settings.missedGraceMs,
    maxEntries: settings.uidIndexSize,
    since: clock.now(),
    metrics: {
      nudgeToPublished: metrics.webhookNudgeToPublished,
      missedDeliveries: metrics.webhookMissedDeliveries,
    },
  });
  return {
    published: publishedCallsFeed(uidLocations, ledger),
    ledger,
    wire: (target, standingBy) => {
      const sink = schedulerNudgeSink({ target, metrics, ledger });
      return {
        sink: standingBy === undefined ? sink : refusedWhileStandingBy(sink, standingBy),
        uidLocations,
        replay,
      };
    },
    owned: (target) => ownedLocationNudge({ target, metrics, ledger }),
    sharedReplayKeys: ({ key, atMs }) => replay.recordShared(key, atMs, clock.now()),
  };
}

/** The receiver's replay window (webhooks.replay, webhooks.signature.toleranceMs). */
function replayWindow(settings: StartContext['config']['webhooks']): ReplayWindow {
  return new ReplayWindow({
    keepMs: replayKeepMs(settings.signature.toleranceMs, settings.replay.waiveProtection),
    maxEntries: settings.replay.maxEntries,
  });
}

/**
 * Distributed mode: the receiver's nudges go through the nudge topic (kafka/nudges/nudge-topic.ts) to the
 * instances owning their locations; this instance reads it and nudges its own (`owned`), and enters every
 * delivery's replay key the topic shares into its replay window (`sharedReplayKeys`), those written up to the
 * window's keep time before this instance started included. The sink resolves once
 * the nudges are written (the delivery is then acknowledged); a failed write rejects (503, the API retries).
 * The reader's health is the readiness check `nudge_reader`: an instance that cannot act on the nudges meant
 * for it is not ready. A reader whose first consumer cannot start does not fail the start: it is tried again in
 * the background (kafka/nudges/nudge-reader.ts) and the check says why meanwhile.
 */
export async function nudgeRelay(
  ctx: StartContext,
  kafka: KafkaClient,
  options: {
    partitionCount: number;
    /** Unique per instance (its consumer group reads every partition). */
    instanceId: string;
    owned: (nudge: { uid: string; location: string }) => void;
    /** Each replay key the nudge topic shares (WebhookDeliveries.sharedReplayKeys). */
    sharedReplayKeys: (replay: SharedReplayKey) => void;
    readiness: Pick<Readiness, 'add'>;
  },
): Promise<NudgeSink> {
  const { config, logger, lifecycle, clock } = ctx;
  const topic = nudgeTopicName(config.kafka.offsetsTopic);
  await ensureNudgeTopic(kafka, {
    topic,
    partitions: options.partitionCount,
    replicationFactor: config.kafka.replicationFactor,
    create: config.kafka.createTopics,
  });
  const writer = new NudgeTopicWriter(kafka, {
    topic,
    connectorName: config.connector.name,
    partitionCount: options.partitionCount,
  });
  await writer.connect();
  lifecycle.defer('nudge topic writer', () => writer.disconnect());
  const reader = kafkaNudgeReader(kafka, {
    topic,
    groupId: `${config.connector.name}-nudges-${options.instanceId}`,
    startAtMs: ctx.startedAt,
    // The keys of deliveries other instances took before this one started, as long as a replay of them could
    // still be accepted (the topic keeps an hour: a window kept longer, replay protection waived, starts there).
    keysFromMs:
      ctx.startedAt -
      Math.min(
        replayKeepMs(config.webhooks.signature.toleranceMs, config.webhooks.replay.waiveProtection),
        NUDGE_RETENTION_MS,
      ),
    each: options.owned,
    replayKeys: options.sharedReplayKeys,
    clock,
    logger,
  });
  await reader.start();
  lifecycle.defer('nudge topic reader', () => reader.stop());
  options.readiness.add(nudgeReaderCheck(reader));
  return relayedNudgeSink(writer);
}

/** The readiness check `nudge_reader`: fails, naming why, while the nudge topic reader is not running. */
export function nudgeReaderCheck(reader: Pick<NudgeTopicReader, 'health'>): NamedReadinessCheck {
  return {
    name: 'nudge_reader',
    check: () => Promise.resolve({ name: 'nudge_reader', ...reader.health() }),
  };
}

export async function startWebhooks(
  ctx: StartContext,
  env: NodeJS.ProcessEnv = process.env,
  wiring?: WebhookWiring,
): Promise<Webhooks | null> {
  const { config, logger, metrics, clock, lifecycle } = ctx;
  const settings = config.webhooks;
  if (!settings.enabled) return null;
  const rule = await signatureRule(settings, env);
  if (rule.scheme === 'none') {
    logger.warn(
      { key: 'webhooks.allowUnsigned' },
      'WEBHOOK SIGNATURES ARE NOT CHECKED (webhooks.allowUnsigned: true): anyone who reaches the receiver can ' +
        'trigger polls. Development only; never expose this receiver.',
    );
  }
  const uidLocations = wiring?.uidLocations ?? new LruUidLocations(settings.uidIndexSize);
  const sink = wiring?.sink ?? loggingNudgeSink(logger);
  const receiver = new WebhookReceiver({
    host: settings.host,
    port: settings.port,
    path: settings.path,
    tls: settings.tls === undefined ? undefined : await readTlsFiles(settings.tls),
    bodyLimitBytes: settings.bodyLimitBytes,
    limits: settings.limits,
    rule,
    replay: wiring?.replay ?? replayWindow(settings),
    mapping: settings.payload,
    directory: locationDirectory(config.sources),
    index: uidLocations,
    sink,
    metrics,
    clock,
    logger,
  });
  primeWebhookMetrics(metrics);
  const address = await receiver.start();
  lifecycle.defer('webhook receiver', () => receiver.close());
  logger.info(
    { url: address.url, scheme: rule.scheme, tls: settings.tls !== undefined },
    'webhook receiver listening',
  );
  return { address, uidLocations };
}
