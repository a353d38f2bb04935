package com.callsconnector.examples;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Calls per location per hour, from the calls topic written by calls-connector, kept up to date as calls
 * arrive and change.
 *
 * <p>The calls topic is a change log keyed by uid: a call is published again each time it changes. So the
 * job keeps each call's latest (location, hour) in a table and counts the table: a call counts once, in
 * the bucket of its latest version; a call that moves (or a tombstone) is taken out of its old bucket.
 * Output: key "locationUid hour" (hour as ISO-8601, e.g. 2026-11-24T09:00:00Z), value the count (a long),
 * a new value each time a bucket changes; a bucket that emptied reads 0.
 *
 * <p>The hour is the hour the call started (startedAt, from GET /v4/calls/{uid}); a call the connector
 * could not enrich has no startedAt and counts at the hour of its last change (updatedAt), the best time
 * known for it.
 *
 * <p>exactly_once_v2: reads the calls topic read_committed (only pages the connector committed) and writes
 * its counts and state in transactions, so a restart neither loses nor double-counts a call.
 */
public final class CallsPerHour {
  private CallsPerHour() {}

  /** "locationUid hour" of a call version; null for a tombstone. */
  static String bucket(GenericRecord call) {
    if (call == null) return null;
    Object started = call.get("startedAt");
    long micros = started != null ? (Long) started : (Long) call.get("updatedAt");
    Instant hour = Instant.EPOCH.plus(micros, ChronoUnit.MICROS).truncatedTo(ChronoUnit.HOURS);
    return call.get("locationUid") + " " + hour;
  }

  static Topology topology(String callsTopic, String outputTopic, Serde<GenericRecord> calls) {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(callsTopic, Consumed.with(Serdes.String(), calls))
        .mapValues(CallsPerHour::bucket)
        .toTable(Materialized.with(Serdes.String(), Serdes.String()))
        .groupBy((uid, bucket) -> KeyValue.pair(bucket, uid), Grouped.with(Serdes.String(), Serdes.String()))
        .count()
        .toStream()
        .to(outputTopic, Produced.with(Serdes.String(), Serdes.Long()));
    return builder.build();
  }

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    if (value != null && !value.isEmpty()) return value;
    if (fallback != null) return fallback;
    throw new IllegalArgumentException("set " + name + " (see README.md)");
  }

  public static void main(String[] args) throws IOException, InterruptedException {
    Properties props = new Properties();
    // TLS/SASL and any other client or Streams setting: a properties file named by KAFKA_CONFIG_FILE.
    String extra = System.getenv("KAFKA_CONFIG_FILE");
    if (extra != null) {
      try (InputStream in = new FileInputStream(extra)) {
        props.load(in);
      }
    }
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, env("APPLICATION_ID", "calls-per-hour"));
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env("KAFKA_BROKERS", null));
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.STATE_DIR_CONFIG, env("STATE_DIR", System.getProperty("java.io.tmpdir") + "/kafka-streams"));
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // Implied by exactly_once_v2; stated because the connector's uncommitted pages must never be counted.
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.ISOLATION_LEVEL_CONFIG), "read_committed");

    Serde<GenericRecord> calls =
        Serdes.serdeFrom(
            (topic, value) -> {
              throw new UnsupportedOperationException("this job never writes calls");
            },
            new RegistryAvroDeserializer(
                env("SCHEMA_REGISTRY_URL", null), System.getenv("SCHEMA_REGISTRY_BASIC_AUTH")));
    Topology topology =
        topology(env("CALLS_TOPIC", "calls"), env("OUTPUT_TOPIC", "calls-per-location-hour"), calls);

    CountDownLatch stopped = new CountDownLatch(1);
    try (KafkaStreams streams = new KafkaStreams(topology, props)) {
      streams.setUncaughtExceptionHandler(
          error -> {
            System.err.println("calls-per-hour: " + error);
            stopped.countDown();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
          });
      Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown));
      streams.start();
      System.err.println("calls-per-hour: counting " + env("CALLS_TOPIC", "calls"));
      stopped.await();
    }
  }
}
