/**
 * Command lines written in documentation and deployment files, checked against the real command tree
 * (`buildProgram()`), so a renamed or removed flag cannot linger in a README, a runbook or a compose file.
 */
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.js';

/**
 * Every `calls-connector ...` invocation in a text, as its words after `calls-connector`, up to the end of the
 * line, a closing backtick or a comment. Not `/etc/calls-connector/...` or `calls-connector.<name>`.
 */
export function invocationsIn(text: string): string[][] {
  return [...text.matchAll(/(?<![\w/.-])calls-connector ([^`#\n]*)/g)].map((m) =>
    m[1]!.trim().split(/\s+/).filter(Boolean),
  );
}

/** The flags of an invocation (words after `calls-connector`) that the command it runs does not have. */
export function unknownFlags(words: readonly string[], program: Command = buildProgram()): string[] {
  let target: Command = program;
  for (const word of words) {
    const sub = target.commands.find((c) => c.name() === word);
    if (sub === undefined) break;
    target = sub;
  }
  const known = new Set([...target.options.map((o) => o.long), '--help', '--version']);
  return words
    .filter((word) => word.startsWith('--'))
    .map((word) => word.split('=')[0]!)
    .filter((flag) => /^--[a-z0-9-]+$/.test(flag) && !known.has(flag));
}
