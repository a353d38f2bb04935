/** The "Examples:" block every command's `--help` ends with (checked for every command by test/unit/cli/help.test.ts). */
export function examples(...commands: string[]): string {
  return `\nExamples:\n${commands.map((c) => `  $ ${c}`).join('\n')}\n`;
}
