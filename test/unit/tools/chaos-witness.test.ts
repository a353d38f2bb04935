import { describe, expect, it } from 'vitest';
import { witnessPython } from '../../../tools/chaos/witness.js';

describe('the chaos witness', () => {
  it('refuses to run without its Python and says how to build it (no fallback reader)', () => {
    expect(() => witnessPython('/nonexistent-root')).toThrow(
      /witness needs Python with confluent-kafka; \/nonexistent-root\/\.cache\/examples-python\/bin\/python is missing: build it as \.ci\/run does/,
    );
  });
});
