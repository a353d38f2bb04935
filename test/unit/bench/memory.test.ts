/**
 * The heap bound the image ships is the one the memory bench measures, so the bench's "fits a 512 MiB
 * container" goal speaks for the image.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IMAGE_HEAP_MIB, memoryBench } from '../../../bench/memory.js';

const dockerfile = readFileSync(resolve(import.meta.dirname, '../../../Dockerfile'), 'utf8');

describe('the memory bench and the image', () => {
  it('measures under the heap bound the Dockerfile sets', () => {
    const bound = /NODE_OPTIONS=--max-old-space-size=(\d+)/.exec(dockerfile)?.[1];
    expect(Number(bound)).toBe(IMAGE_HEAP_MIB);
    expect(memoryBench.execArgv).toEqual([`--max-old-space-size=${IMAGE_HEAP_MIB}`]);
    expect(memoryBench.isolated).toBe(true);
  });

  it('sets the bound in the runtime stage, the one that runs the connector', () => {
    const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));
    expect(runtime).toMatch(/NODE_OPTIONS=--max-old-space-size=\d+/);
  });
});
