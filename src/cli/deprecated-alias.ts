/**
 * An option's old name, kept working for the scripts written against it: hidden from the help, and
 * its first use in a command line prints one line on stderr naming the new one. Its values are parsed
 * by the new option's own parser (a mistake is a usage error naming the old flag, as typed) and set
 * on the new option, so a command reads only the new name. Imports nothing but commander.
 */
import { type Command, Option } from 'commander';
import type { CliIo } from './command-kit.js';

/**
 * Adds `oldFlags` (e.g. `--ops-url <URL>`) to `command` as a deprecated alias of its option
 * `current`, which must already be added.
 */
export function addDeprecatedAlias(command: Command, current: Option, oldFlags: string, io: CliIo): Command {
  const parse = current.parseArg;
  const alias = new Option(oldFlags, `deprecated name of ${current.long}`).hideHelp();
  if (parse !== undefined) alias.argParser(parse);
  command.addOption(alias);
  let warned = false;
  // Commander has set the alias's own value by now (its listener was added first): carry it over.
  command.on(`option:${alias.name()}`, (text: string) => {
    if (!warned) {
      io.stderr.write(`lattice: ${alias.long} is deprecated and will be removed; use ${current.long}\n`);
      warned = true;
    }
    const attribute = current.attributeName();
    const value = parse === undefined ? text : parse(text, command.getOptionValue(attribute));
    command.setOptionValueWithSource(attribute, value, 'cli');
  });
  return command;
}
