/**
 * Loads the Avro schemas shipped in the package's `schemas/` folder. The folder sits at the package
 * root, which is two levels above this module in the sources (src/kafka/avro) and three in the build
 * (dist/src/kafka/avro), so it is found by walking up rather than by a fixed relative path.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Schema } from 'avsc';

export const CALL_VALUE_SCHEMA_FILE = 'call.avsc';
export const CALL_KEY_SCHEMA_FILE = 'call-key.avsc';

export function schemasDirectory(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'schemas');
    if (existsSync(join(candidate, CALL_VALUE_SCHEMA_FILE))) return candidate;
    if (dirname(dir) === dir) throw new Error(`schemas/${CALL_VALUE_SCHEMA_FILE} not found above ${from}`);
  }
}

export function loadSchema(file: string): Schema {
  return JSON.parse(readFileSync(join(schemasDirectory(), file), 'utf8')) as Schema;
}
