/** The profile summary of bench/profile.ts: self time by function and group, idle left out. */
import type { Profiler } from 'node:inspector';
import { describe, expect, it } from 'vitest';
import { costGroup, summariseProfile } from '../../../bench/profile.js';

function node(id: number, functionName: string, url: string, children: number[] = []): Profiler.ProfileNode {
  return {
    id,
    callFrame: { functionName, url, scriptId: String(id), lineNumber: 9, columnNumber: 0 },
    children,
  };
}

describe('profile summary', () => {
  it('sums self time per function and per group, counting Node code for the library that called it', () => {
    const profile: Profiler.Profile = {
      nodes: [
        node(1, '(root)', '', [2, 3, 4, 5]),
        node(2, '(idle)', ''),
        node(3, '(garbage collector)', ''),
        node(4, 'encode', 'file:///app/node_modules/kafkajs/src/protocol/encoder.js', [6]),
        node(5, 'processPage', 'file:///app/dist/src/sync/location-sync.js'),
        node(6, 'alloc', 'node:buffer'),
      ],
      startTime: 0,
      endTime: 100,
      // Each sample stands for the delta that follows it.
      samples: [2, 3, 4, 4, 5, 6, 2],
      timeDeltas: [0, 50, 10, 20, 10, 10, 5],
    };
    const summary = summariseProfile(profile);
    expect(summary.busyMicros).toBe(55);
    expect(summary.functions).toEqual([
      { name: 'encode (kafkajs/src/protocol/encoder.js:10)', micros: 30 },
      { name: '(garbage collector)', micros: 10 },
      { name: 'processPage (dist/src/sync/location-sync.js:10)', micros: 10 },
      { name: 'alloc (node:buffer:10)', micros: 5 },
    ]);
    // The Buffer kafkajs allocated is kafkajs's cost.
    expect(summary.groups).toEqual([
      { name: 'kafkajs', micros: 35 },
      { name: 'GC', micros: 10 },
      { name: 'ours (src/)', micros: 10 },
    ]);
  });

  it('groups scripts into GC, TLS, undici, libraries and our code', () => {
    const group = (functionName: string, url: string) => costGroup({ functionName, url });
    expect(group('(garbage collector)', '')).toBe('GC');
    expect(group('onread', 'node:_tls_wrap')).toBe('TLS');
    expect(group('dispatch', 'file:///a/node_modules/undici/lib/dispatcher/client.js')).toBe(
      'undici (HTTP client)',
    );
    expect(group('toBuffer', 'file:///a/node_modules/avsc/lib/types.js')).toBe('avsc');
    expect(group('x', 'file:///a/node_modules/@kafkajs/confluent-schema-registry/dist/a.js')).toBe(
      '@kafkajs/confluent-schema-registry',
    );
    expect(group('enrich', 'file:///a/dist/src/sync/enricher.js')).toBe('ours (src/)');
  });
});
