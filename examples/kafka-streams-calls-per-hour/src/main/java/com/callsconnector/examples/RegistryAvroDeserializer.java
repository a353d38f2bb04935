package com.callsconnector.examples;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Decodes Avro values in the Confluent wire format (magic byte 0, 4-byte schema id, Avro binary) with the
 * writer schema fetched by id from any Confluent-compatible registry: GET {url}/schemas/ids/{id} (Confluent
 * Schema Registry, Apicurio's ccompat API, Karapace, Redpanda). Schemas are immutable per id, so each is
 * fetched once.
 *
 * <p>Why not a library serde: Confluent's kafka-streams-avro-serde is not on Maven Central (only on
 * packages.confluent.io; where you have that repository, its GenericAvroSerde is a drop-in replacement),
 * and Apicurio's serdes speak Apicurio's own API, not a Confluent registry's.
 */
public final class RegistryAvroDeserializer implements Deserializer<GenericRecord> {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private final Map<Integer, GenericDatumReader<GenericRecord>> readers = new ConcurrentHashMap<>();
  private final String registryUrl;
  private final String authorization;

  /** @param basicAuth "user:password", or null */
  public RegistryAvroDeserializer(String registryUrl, String basicAuth) {
    this.registryUrl = registryUrl.replaceAll("/+$", "");
    this.authorization =
        basicAuth == null
            ? null
            : "Basic " + Base64.getEncoder().encodeToString(basicAuth.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public GenericRecord deserialize(String topic, byte[] data) {
    if (data == null) return null; // a tombstone
    ByteBuffer buffer = ByteBuffer.wrap(data);
    if (data.length < 5 || buffer.get() != 0) {
      throw new SerializationException("not the Confluent wire format (magic byte 0 and a schema id)");
    }
    int id = buffer.getInt();
    try {
      return readers
          .computeIfAbsent(id, this::reader)
          .read(null, DecoderFactory.get().binaryDecoder(data, 5, data.length - 5, null));
    } catch (IOException e) {
      throw new SerializationException("cannot decode a value written with schema id " + id, e);
    }
  }

  private GenericDatumReader<GenericRecord> reader(int id) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(registryUrl + "/schemas/ids/" + id))
            .timeout(Duration.ofSeconds(30))
            .header("Accept", "application/vnd.schemaregistry.v1+json, application/json");
    if (authorization != null) request.header("Authorization", authorization);
    try {
      HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new SerializationException(
            "schema registry answered " + response.statusCode() + " for schema id " + id + ": " + response.body());
      }
      Schema schema = new Schema.Parser().parse(JSON.readTree(response.body()).get("schema").asText());
      return new GenericDatumReader<>(schema);
    } catch (IOException e) {
      throw new SerializationException("cannot fetch schema id " + id + " from " + registryUrl, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SerializationException("interrupted fetching schema id " + id, e);
    }
  }
}
