import { describe, expect, it } from 'vitest';
import {
  parseStackCheck,
  parseStackEndpoints,
  provideStack,
  STACK_ORDER,
  stackOrder,
} from '../../../../tools/devstack/stack-provider.js';

describe('parseStackEndpoints', () => {
  it('finds the endpoints line after stray terminal codes a first Maven run prints (regression)', () => {
    const stdout =
      '\u001b[0m\u001b[0m\u001b[0m\u001b[0m{"brokers":"127.0.0.1:19092","registryUrl":"http://127.0.0.1:18081/apis/ccompat/v7","kafkaVersion":"3.9.2"}\n';
    expect(parseStackEndpoints(stdout)).toEqual({
      brokers: '127.0.0.1:19092',
      registryUrl: 'http://127.0.0.1:18081/apis/ccompat/v7',
      foreign: false,
    });
  });

  it('tells a stack another checkout started (left running by our stack:down) from one started here', () => {
    const line = (foreign: boolean) =>
      `${JSON.stringify({ brokers: 'b:1', registryUrl: 'http://r', kafkaVersion: '4.4.0', foreign })}\n`;
    expect(parseStackEndpoints(line(true)).foreign).toBe(true);
    expect(parseStackEndpoints(line(false)).foreign).toBe(false);
  });

  it('says what the script printed when there is no endpoints line', () => {
    expect(() => parseStackEndpoints('something else\n')).toThrow(/printed no endpoints.*something else/s);
  });
});

describe('parseStackCheck', () => {
  it('reads the problems of the verdict line', () => {
    expect(parseStackCheck('noise\n{"ok":false,"problems":["Maven (mvn) is needed"]}\n')).toEqual([
      'Maven (mvn) is needed',
    ]);
    expect(parseStackCheck('{"ok":true,"problems":[]}\n')).toEqual([]);
  });

  it('turns a missing verdict into a problem that quotes the output', () => {
    expect(parseStackCheck('boom')).toEqual([expect.stringMatching(/printed no verdict.*boom/)]);
  });
});

describe('stackOrder: the one order of the tests and the demo', () => {
  it('tries the environment, then the JVM stack, then Docker', () => {
    expect(stackOrder({})).toEqual(['environment', 'jvm', 'docker']);
    expect(STACK_ORDER).toEqual(['environment', 'jvm', 'docker']);
  });

  it('keeps only the environment and the source CALLS_STACK (or CI’s CALLS_TEST_STACK) names', () => {
    expect(stackOrder({ CALLS_STACK: 'docker' })).toEqual(['environment', 'docker']);
    expect(stackOrder({ CALLS_TEST_STACK: 'jvm' })).toEqual(['environment', 'jvm']);
  });

  it('refuses a source it does not know', () => {
    expect(() => stackOrder({ CALLS_STACK: 'podman' })).toThrow(/CALLS_STACK must be jvm or docker/);
  });
});

describe('provideStack when no source can provide one', () => {
  it('says per source what is missing, before starting or fetching anything', async () => {
    const error = await provideStack(['environment'], {}).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'DEVSTACK_UNAVAILABLE' });
    expect(String((error as Error).message)).toMatch(
      /openjdk-21-jre-headless[\s\S]*environment: KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not both set/,
    );
  });
});
