import { describe, expect, it } from 'vitest';
import { parseStackEndpoints } from '../../../../tools/devstack/stack-provider.js';

describe('parseStackEndpoints', () => {
  it('finds the endpoints line after stray terminal codes a first Maven run prints (regression)', () => {
    const stdout =
      '\u001b[0m\u001b[0m\u001b[0m\u001b[0m{"brokers":"127.0.0.1:19092","registryUrl":"http://127.0.0.1:18081/apis/ccompat/v7","kafkaVersion":"3.9.2"}\n';
    expect(parseStackEndpoints(stdout)).toEqual({
      brokers: '127.0.0.1:19092',
      registryUrl: 'http://127.0.0.1:18081/apis/ccompat/v7',
    });
  });

  it('says what the script printed when there is no endpoints line', () => {
    expect(() => parseStackEndpoints('something else\n')).toThrow(/printed no endpoints.*something else/s);
  });
});
