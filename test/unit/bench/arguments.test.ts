import { describe, expect, it } from 'vitest';
import { benchArguments } from '../../../bench/arguments.js';

describe('the bench command line', () => {
  it('takes module names, --quick and --help', () => {
    expect(benchArguments(['restart', '--quick', 'idle'])).toEqual({
      wanted: ['restart', 'idle'],
      quick: true,
      help: false,
    });
    expect(benchArguments(['--help'])).toMatchObject({ help: true, wanted: [] });
    expect(benchArguments([])).toEqual({ wanted: [], quick: false, help: false });
  });

  it('reads the module an isolated child runs, which is not a module to run', () => {
    expect(benchArguments(['--child', 'idle', '--quick'])).toEqual({
      wanted: [],
      quick: true,
      help: false,
      child: 'idle',
    });
    expect(() => benchArguments(['--child'])).toThrow('--child needs a module name');
  });

  it('refuses a flag it does not know instead of running every module', () => {
    expect(() => benchArguments(['--hepl'])).toThrow(/unknown option --hepl\nusage: npm run bench/);
  });
});
