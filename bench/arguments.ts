/**
 * The command line of `npm run bench` (bench/run.ts): module names to run (none: all), `--quick`, `--help`, and
 * `--child <name>` (run.ts's own call of an isolated module in a process of its own). Any other flag is refused,
 * so a mistyped or unknown one (`--hepl`) says so instead of running every module for most of an hour.
 */
export interface BenchArguments {
  /** The modules named, in order; empty: every module. */
  wanted: string[];
  quick: boolean;
  help: boolean;
  /** The isolated module this process runs for its parent; undefined in the parent. */
  child?: string;
}

export const BENCH_USAGE =
  'usage: npm run bench -- [--quick] [module ...]   (npm run bench -- --help lists the modules)';

/** Parses `argv` (process.argv without node and the script); throws on a flag it does not know. */
export function benchArguments(argv: readonly string[]): BenchArguments {
  const parsed: BenchArguments = { wanted: [], quick: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--quick') parsed.quick = true;
    else if (arg === '--help' || arg === '-h') parsed.help = true;
    else if (arg === '--child') {
      const name = argv[i + 1];
      if (name === undefined || name.startsWith('-'))
        throw new Error(`--child needs a module name\n${BENCH_USAGE}`);
      parsed.child = name;
      i += 1;
    } else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}\n${BENCH_USAGE}`);
    else parsed.wanted.push(arg);
  }
  return parsed;
}
