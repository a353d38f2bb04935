"""Reads the calls topic written by calls-connector and prints one JSON line per call version.

- isolation.level=read_committed: the connector writes each page in a Kafka transaction; a reader that also
  saw aborted or still-open transactions could print calls that were never committed (and print them twice
  once the page is written again). It is librdkafka's default; it is set here so nobody turns it off.
- Values are Avro in the Confluent wire format; AvroDeserializer fetches the writer schema by the id each
  value carries, so new optional fields never break this reader.
- The key is the call's uid: a call is published again each time it changes; keep the latest per uid.
- A null value is a tombstone (kafka.tombstoneGoneCalls): the call is gone, forget it.

Run: python consumer.py (settings from the environment; see README.md).
"""

import json
import os
import signal
import sys
from datetime import datetime

from confluent_kafka import Consumer, KafkaException
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def env(name, default=None):
    value = os.environ.get(name, default)
    if not value:
        sys.exit(f"set {name} (see README.md)")
    return value


def iso(value):
    # fastavro decodes timestamp-micros to an aware datetime (UTC).
    return value.isoformat() if isinstance(value, datetime) else value


def main():
    # A request the registry never answers fails after `timeout` seconds and is retried (max.retries) instead of
    # holding the consumer forever: the client waits without a limit by default.
    registry_conf = {"url": env("SCHEMA_REGISTRY_URL"), "timeout": 10}
    if os.environ.get("SCHEMA_REGISTRY_BASIC_AUTH"):
        registry_conf["basic.auth.user.info"] = os.environ["SCHEMA_REGISTRY_BASIC_AUTH"]
    # The connector registers its schema under "<topic>-value" (TopicNameStrategy). Saying so spares the
    # deserializer's default (ASSOCIATED) a lookup of /associations per topic, an endpoint older Confluent
    # registries and Apicurio's ccompat API do not have.
    deserialize = AvroDeserializer(
        SchemaRegistryClient(registry_conf), conf={"subject.name.strategy.type": "TOPIC"}
    )

    conf = {
        "bootstrap.servers": env("KAFKA_BROKERS"),
        "group.id": env("GROUP_ID", "calls-example-python"),
        # A new group starts at the beginning of the topic (the whole history); a known group where it left off.
        "auto.offset.reset": "earliest",
        # Only committed transactions: never a call from a page the connector aborted and wrote again.
        "isolation.level": "read_committed",
    }
    # TLS/SASL and any other librdkafka property: KAFKA_CONFIG="security.protocol=SASL_SSL,sasl.mechanism=..."
    for pair in filter(None, os.environ.get("KAFKA_CONFIG", "").split(",")):
        key, _, value = pair.partition("=")
        conf[key.strip()] = value.strip()

    topic = env("CALLS_TOPIC", "calls")
    consumer = Consumer(conf)
    consumer.subscribe([topic])
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while running:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                # librdkafka retries transient errors (a broker down, a topic not there yet) by itself.
                if message.error().fatal():
                    raise KafkaException(message.error())
                print(f"kafka: {message.error()}", file=sys.stderr, flush=True)
                continue
            uid = message.key().decode("utf-8") if message.key() is not None else ""
            where = {"partition": message.partition(), "offset": message.offset()}
            if message.value() is None:
                print(json.dumps({"uid": uid, "deleted": True, **where}), flush=True)
                continue
            call = deserialize(message.value(), SerializationContext(topic, MessageField.VALUE))
            line = {
                "uid": call["uid"],
                "locationUid": call["locationUid"],
                "updatedAtIso": call["updatedAtIso"],
                "startedAt": iso(call["startedAt"]),
                "isPrivate": call["isPrivate"],
                "enriched": call["enriched"],
                "customerPhoneNumber": call["customerPhoneNumber"],
                **where,
            }
            print(json.dumps(line), flush=True)
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
