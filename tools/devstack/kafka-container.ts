/**
 * Apache Kafka's own image (apache/kafka) as a single-node KRaft broker under testcontainers, so that the Docker
 * path of the tests runs the same Kafka release as the JVM stack and docker-compose.yml.
 *
 * Why not @testcontainers/kafka's KafkaContainer: it drives Confluent's images (their /etc/confluent/docker
 * scripts), whose Kafka line lags. This follows what it and Testcontainers for Java do for apache/kafka: the
 * container waits for a start script that names the advertised listener with the host port Docker mapped,
 * which is known only once the container runs.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { StartedTestContainer } from 'testcontainers';
import { FatalError } from '../../src/errors/index.js';

const CLIENT_PORT = 9092;
const START_SCRIPT = '/tmp/calls-connector-start.sh';
const WAITING = 'calls-connector: waiting for the start script';
const READY_TIMEOUT_MS = 120_000;

export interface StartedKafka {
  container: StartedTestContainer;
  /** host:port of the broker as seen from this process. */
  bootstrap: string;
}

export async function startApacheKafka(
  tc: typeof import('testcontainers'),
  version: string,
): Promise<StartedKafka> {
  const container = await new tc.GenericContainer(`apache/kafka:${version}`)
    .withExposedPorts(CLIENT_PORT)
    .withEnvironment({
      CLUSTER_ID: 'q1Sh-9_ISia_zwGINzRvyQ',
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${CLIENT_PORT},BROKER://0.0.0.0:9093,CONTROLLER://0.0.0.0:9094`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9094',
      // One node: without these, transactions and consumer groups hang waiting for replicas (as scripts/stack.mjs).
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      KAFKA_LOG_CLEANER_BACKOFF_MS: '1000',
    })
    .withEntrypoint(['sh'])
    .withCommand([
      '-c',
      `echo '${WAITING}'; while [ ! -f ${START_SCRIPT} ]; do sleep 0.1; done; exec bash ${START_SCRIPT}`,
    ])
    .withWaitStrategy(tc.Wait.forLogMessage(WAITING))
    .withStartupTimeout(180_000)
    .start();
  const bootstrap = `${container.getHost()}:${container.getMappedPort(CLIENT_PORT)}`;
  await container.copyContentToContainer([
    {
      content: [
        '#!/bin/bash',
        `export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://${bootstrap},BROKER://$(hostname):9093`,
        'exec /etc/kafka/docker/run',
        '',
      ].join('\n'),
      target: START_SCRIPT,
      mode: 0o755,
    },
  ]);
  await untilBrokerAnswers(bootstrap, container);
  return { container, bootstrap };
}

/** Polls the broker's metadata until it answers, within READY_TIMEOUT_MS (then stops the container). */
async function untilBrokerAnswers(bootstrap: string, container: StartedTestContainer): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const admin = new Kafka({
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  }).admin();
  try {
    while (Date.now() < deadline) {
      try {
        await admin.connect();
        if ((await admin.describeCluster()).brokers.length > 0) return;
      } catch {
        // not up yet
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await admin.disconnect().catch(() => {});
  }
  await container.stop().catch(() => {});
  throw new FatalError(
    'DEVSTACK_START_FAILED',
    `apache/kafka did not answer on ${bootstrap} within ${READY_TIMEOUT_MS / 1000} s (docker logs of the container say why)`,
  );
}
