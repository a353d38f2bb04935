/** Parsers of command-line option values shared by the commands; each rejects bad input with a clear message. */
import { InvalidArgumentError } from 'commander';

/** A whole number >= `min` (default 0). */
export function wholeNumber(min = 0): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`expected a whole number >= ${min}`);
    return n;
  };
}
