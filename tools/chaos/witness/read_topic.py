"""The chaos checker's witness: reads one topic to its end with librdkafka and prints what it read.

It shares nothing with the connector (which writes with kafkajs): confluent-kafka (librdkafka) reads with
isolation.level=read_committed, so records of aborted transactions are never returned, whichever producers
wrote the partition; values are decoded from the Confluent wire format (magic byte 0, 4-byte schema id, Avro
body) with the writer schema the registry holds for that id, by fastavro.

"Its end" is measured, not guessed: the end offsets of EVERY partition are read first (ListOffsets, the high
watermark and the last stable offset), then each partition is read from its beginning until librdkafka's
position reaches that high watermark (partition EOF at or past it). A partition that does not get there
within --timeout-s (an open transaction holds its last stable offset back, a broker that does not answer) is
named in the summary and the exit status is 2: the checker never judges a topic it did not read whole.

Output, one JSON object per line on stdout:
  {"partition": P, "offset": O, "timestamp": T, "key": "...", "keyBase64": null, "schemaId": N, "value": {...}}
    per record; timestamp is the record's Kafka timestamp in ms (the producer's CreateTime, or the broker's
    LogAppendTime), null when the record has none
    value is the decoded Avro record (--decode avro; logical types left out: times are the longs on the
    wire, as the schema stores them), the UTF-8 text (--decode text), or absent (--decode none); null for a
    tombstone. key is the key as UTF-8, or null with keyBase64 set when it is not UTF-8. signal is the
    record's calls-connector.source.signal header (a backfill signal's re-read), null when it has none.
  {"summary": {"topicExists": bool, "partitions": [{"partition", "low", "high", "lastStable",
    "position", "records", "reachedEnd"}], "elapsedMs": ms}}  last, always (also on a timeout)
Exit status: 0 every partition read to its end; 2 some partition was not (named on stderr); 1 an error.
"""

import argparse
import base64
import io
import json
import os
import sys
import time
import warnings

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec
import fastavro

# The registry client imports authlib, whose deprecation notice (it forces its own filter to "always") is no
# failure of the read: it is kept off stderr, which the checker shows when the witness fails.
with warnings.catch_warnings():
    warnings.showwarning = lambda *args, **kwargs: None
    from confluent_kafka.schema_registry import SchemaRegistryClient

MAGIC_BYTE = 0
SIGNAL_HEADER = "calls-connector.source.signal"
REQUEST_TIMEOUT_S = 30


def without_logical_types(schema):
    """The schema with every logicalType removed: the witness reports the values as written, not converted."""
    if isinstance(schema, dict):
        return {k: without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [without_logical_types(s) for s in schema]
    return schema


class AvroDecoder:
    """Confluent wire format -> the record, with each writer schema fetched once by its id."""

    def __init__(self, registry_url):
        self.registry = SchemaRegistryClient({"url": registry_url})
        self.schemas = {}

    def decode(self, payload):
        if len(payload) < 5 or payload[0] != MAGIC_BYTE:
            raise ValueError(f"not the Confluent wire format (first byte {payload[:1].hex() or 'none'})")
        schema_id = int.from_bytes(payload[1:5], "big")
        parsed = self.schemas.get(schema_id)
        if parsed is None:
            schema = json.loads(self.registry.get_schema(schema_id).schema_str)
            parsed = fastavro.parse_schema(without_logical_types(schema))
            self.schemas[schema_id] = parsed
        return schema_id, fastavro.schemaless_reader(io.BytesIO(payload[5:]), parsed)


def json_default(value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def end_offsets(brokers, topic, partitions):
    """Per partition: (low, high watermark, last stable offset), each from ListOffsets."""
    # Warnings and errors only: its informational lines (a background queue purged on exit) are no failure.
    admin = AdminClient({"bootstrap.servers": brokers, "log_level": 4})
    tps = [TopicPartition(topic, p) for p in partitions]

    def ask(spec, isolation):
        futures = admin.list_offsets(
            {tp: spec for tp in tps}, isolation_level=isolation, request_timeout=REQUEST_TIMEOUT_S
        )
        return {tp.partition: f.result().offset for tp, f in futures.items()}

    low = ask(OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED)
    high = ask(OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED)
    stable = ask(OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
    return {p: (low[p], high[p], stable[p]) for p in partitions}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--decode", choices=["avro", "text", "none"], default="none")
    parser.add_argument("--registry-url", help="the schema registry (required by --decode avro)")
    parser.add_argument("--timeout-s", type=float, default=180.0, help="to read every partition to its end")
    args = parser.parse_args()
    if args.decode == "avro" and not args.registry_url:
        parser.error("--decode avro needs --registry-url")

    started = time.monotonic()
    out = sys.stdout
    decoder = AvroDecoder(args.registry_url) if args.decode == "avro" else None
    consumer = Consumer(
        {
            "bootstrap.servers": args.brokers,
            # Never joins the group (assign, not subscribe) and commits nothing: the id is only required.
            "group.id": f"calls-chaos-witness-{os.getpid()}-{int(time.time() * 1000)}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    summary = {"topicExists": False, "partitions": [], "elapsedMs": 0}
    status = 0
    try:
        metadata = consumer.list_topics(args.topic, timeout=REQUEST_TIMEOUT_S).topics.get(args.topic)
        exists = metadata is not None and metadata.error is None
        if metadata is not None and metadata.error is not None:
            if metadata.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise KafkaException(metadata.error)
        summary["topicExists"] = exists
        partitions = sorted(metadata.partitions) if exists else []
        ends = end_offsets(args.brokers, args.topic, partitions) if partitions else {}
        state = {
            p: {
                "partition": p,
                "low": ends[p][0],
                "high": ends[p][1],
                "lastStable": ends[p][2],
                "position": ends[p][0],
                "records": 0,
                "reachedEnd": ends[p][1] <= ends[p][0],
            }
            for p in partitions
        }
        summary["partitions"] = [state[p] for p in partitions]
        pending = {p for p in partitions if not state[p]["reachedEnd"]}
        if pending:
            consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in sorted(pending)])
        deadline = started + args.timeout_s
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                p = message.partition()
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        state[p]["position"] = max(state[p]["position"], message.offset())
                        continue
                    if error.fatal():
                        raise KafkaException(error)
                    print(f"witness: {args.topic}: {error}", file=sys.stderr, flush=True)
                    continue
                state[p]["records"] += 1
                state[p]["position"] = max(state[p]["position"], message.offset() + 1)
                timestamp_type, timestamp = message.timestamp()
                line = {
                    "partition": p,
                    "offset": message.offset(),
                    "timestamp": None if timestamp_type == TIMESTAMP_NOT_AVAILABLE else timestamp,
                }
                key = message.key()
                try:
                    line["key"] = None if key is None else key.decode("utf-8")
                    line["keyBase64"] = None
                except UnicodeDecodeError:
                    line["key"] = None
                    line["keyBase64"] = base64.b64encode(key).decode("ascii")
                line["signal"] = None
                for name, raw in message.headers() or []:
                    if name == SIGNAL_HEADER and raw is not None:
                        line["signal"] = raw.decode("utf-8", "replace")
                value = message.value()
                if decoder is not None:
                    schema_id, decoded = (None, None) if value is None else decoder.decode(value)
                    line["schemaId"] = schema_id
                    line["value"] = decoded
                elif args.decode == "text":
                    line["value"] = None if value is None else value.decode("utf-8")
                out.write(json.dumps(line, default=json_default) + "\n")
            if pending:
                # The app position also moves past transaction markers and aborted records it never returns.
                for tp in consumer.position([TopicPartition(args.topic, p) for p in pending]):
                    if tp.offset >= 0:
                        state[tp.partition]["position"] = max(state[tp.partition]["position"], tp.offset)
            for p in list(pending):
                if state[p]["position"] >= state[p]["high"]:
                    state[p]["reachedEnd"] = True
                    pending.discard(p)
        if pending:
            status = 2
            unread = ", ".join(
                f"{p} (at {state[p]['position']} of {state[p]['high']}, last stable {state[p]['lastStable']})"
                for p in sorted(pending)
            )
            print(
                f"witness: {args.topic}: partitions not read to their end within {args.timeout_s:g} s: {unread}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        consumer.close()
    summary["elapsedMs"] = int((time.monotonic() - started) * 1000)
    out.write(json.dumps({"summary": summary}) + "\n")
    out.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
