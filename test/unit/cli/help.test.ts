import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';

/** Every command below the root, depth first, with its full name ("auth login"). */
function commandsOf(command: Command, prefix = ''): Array<{ name: string; command: Command }> {
  return command.commands.flatMap((sub) => {
    const name = `${prefix}${sub.name()}`;
    return [{ name, command: sub }, ...commandsOf(sub, `${name} `)];
  });
}

/** The text `calls-connector <name> --help` prints, including the text added after the options. */
function helpOf(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  command.outputHelp();
  return text;
}

describe('calls-connector --help', () => {
  const all = commandsOf(buildProgram());

  it('`calls-connector --help` has examples and the exit codes', () => {
    const help = helpOf(buildProgram());
    expect(help).toContain('\nExamples:\n  $ calls-connector demo');
    expect(help).toContain(
      'Exit codes: 0 success, 1 runtime failure, 2 invalid command line or configuration',
    );
  });

  it('covers every command the README lists', () => {
    const names = all.map((c) => c.name);
    for (const name of ['demo', 'run', 'validate-config', 'sandbox', 'offsets show', 'offsets reset', 'tail'])
      expect(names).toContain(name);
    for (const name of ['auth url', 'auth redeem', 'auth login', 'auth status'])
      expect(names).toContain(name);
  });

  it.each(all.map((c) => [c.name, c.command] as const))(
    '`%s --help` has a description and at least one example',
    (name, command) => {
      expect(command.description().length, `${name}: description`).toBeGreaterThan(10);
      const help = helpOf(command);
      expect(help, `${name}: examples`).toMatch(/\nExamples?:\n/);
      expect(help, `${name}: an example invoking it`).toMatch(
        new RegExp(`\\$ (\\S+=\\S+ )*(npx )?calls-connector ${name}\\b`),
      );
    },
  );

  it.each(all.map((c) => [c.name, c.command] as const))(
    'every flag in the examples of `%s --help` is a flag of the command the example runs',
    (name, command) => {
      const program = buildProgram();
      for (const line of helpOf(command).split('\n')) {
        const invocation = /calls-connector ((?:[a-z-]+ ?)+)(.*)$/.exec(line);
        if (invocation === null || !line.trimStart().startsWith('$')) continue;
        // Walk the words after `calls-connector` down the command tree: `offsets show` is a subcommand.
        let target: Command = program;
        for (const word of invocation[1]!.trim().split(' ')) {
          const sub = target.commands.find((c) => c.name() === word);
          if (sub === undefined) break;
          target = sub;
        }
        expect(target, `${name}: "${line.trim()}" runs a command`).not.toBe(program);
        const known = new Set(target.options.map((o) => o.long));
        for (const flag of line.match(/(?<=\s)--[a-z0-9-]+/g) ?? [])
          expect(known, `${name}: "${line.trim()}"`).toContain(flag);
      }
    },
  );
});
