// Installs the product's kafkajs read_committed fix before any test module loads kafkajs, as src/cli/main.ts
// does for the CLI (see src/kafka/client/kafkajs-read-committed-fix.ts).
import '../../src/kafka/client/kafkajs-read-committed-fix.js';
