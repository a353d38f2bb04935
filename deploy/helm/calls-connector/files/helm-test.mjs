// `helm test`: checks a release from inside the cluster with the connector image's own code.
// 1. Every ready pod behind the headless metrics Service answers /readyz 200 and /status RUNNING (a single-mode
//    standby says `role: standby`), and in single mode exactly one pod writes.
// 2. The calls topic is reachable: its metadata fetched with the connector's own Kafka client and configuration
//    (TLS, SASL and secrets as the connector has them).
// Usage: node helm-test.mjs <config.yaml> <metrics host> <metrics port> <mode>, in the image's working directory, with the connector's environment.
// Exit 0 when every check passes; otherwise each failure is printed and the exit code is 1.
import { lookup } from 'node:dns/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [configFile = '', host = '', port = '', mode = ''] = process.argv.slice(2);
const failures = [];

async function get(url) {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: response.status, text: await response.text() };
}

const pods = await lookup(host, { all: true });
if (pods.length === 0) failures.push(`${host} resolves to no pod: none is ready`);
let writers = 0;
for (const { address, family } of pods) {
  const base = `http://${family === 6 ? `[${address}]` : address}:${port}`;
  try {
    const readyz = await get(`${base}/readyz`);
    if (readyz.status !== 200) failures.push(`${base}/readyz answered ${readyz.status}: ${readyz.text}`);
    const status = JSON.parse((await get(`${base}/status`)).text);
    const role = status.instance?.role;
    if (role === 'writer') writers += 1;
    if (status.connector?.state !== 'RUNNING' && role !== 'standby')
      failures.push(`${base}/status: connector ${status.connector?.state} (${status.connector?.trace ?? ''})`);
    console.log(`${base}: /readyz ${readyz.status}, /status ${status.connector?.state}${role ? `, ${role}` : ''}`);
  } catch (error) {
    failures.push(`${base}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
if (mode === 'single' && writers !== 1) failures.push(`single mode: ${writers} pod(s) write, expected one`);

const own = (path) => import(pathToFileURL(join(process.cwd(), 'dist/src', path)).href);
try {
  const { loadConfig } = await own('config/load.js');
  const { createKafka } = await own('kafka/client/kafkajs-client.js');
  const { createLogger } = await own('logging/logger.js');
  const config = await loadConfig(configFile);
  const logger = createLogger({ level: 'warn', format: 'json', destination: process.stderr });
  const admin = createKafka({ config: config.kafka, connectorName: config.connector.name, logger }).admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [config.kafka.topic] });
    const partitions = topics[0]?.partitions.length ?? 0;
    if (partitions === 0) failures.push(`the calls topic ${config.kafka.topic} has no partition`);
    else console.log(`calls topic ${config.kafka.topic}: ${partitions} partition(s)`);
  } finally {
    await admin.disconnect();
  }
} catch (error) {
  failures.push(`the calls topic: ${error instanceof Error ? error.message : String(error)}`);
}

for (const failure of failures) console.error(`FAILED: ${failure}`);
process.exit(failures.length === 0 ? 0 : 1);
