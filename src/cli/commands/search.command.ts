import type { Command } from 'commander';
import { FILTER_OPS } from '../../platform/vectordb/vector-db.js';
import { SEARCH_LIMITS } from '../../vss/serving/request-limits.js';
import { addressOption } from '../address-option.js';
import { addClientFlags, type ClientFlags } from '../client-flags.js';
import { type CliSession, integerIn, lazyAction, repeatable } from '../command-kit.js';
import { addDeprecatedAlias } from '../deprecated-alias.js';

export interface SearchOptions extends ClientFlags {
  entity: string;
  model: string;
  variant: string;
  id?: string;
  vector?: string;
  filter?: string[];
  attributes?: string;
  pageSize?: number;
  pageToken?: string;
  /** vss serving. */
  address?: string;
  json?: boolean;
}

/** `lattice search`. */
export function defineSearch(program: Command, session: CliSession): void {
  const address = addressOption('grpc', 'vss serving (default <host>:<vss.servingPort> from the settings)');
  const command = program
    .command('search')
    .summary('one vss Search from the shell, by candidate id or by vector')
    .description(
      'One page of a vss Search (vss.v1.SimilaritySearch on <host>:<vss.servingPort>, or --address), by ' +
        'candidate id or by vector: a table, or JSON with --json.',
    )
    .requiredOption('--entity <E>', 'the entity (e.g. catalog)')
    .requiredOption('--model <M>', 'the model (e.g. products)')
    .option('--variant <V>', 'the variant to search', 'all')
    .option('--id <ID>', "search near this candidate's embedding (it is not returned itself)")
    .option(
      '--vector <V>',
      'search near this vector: comma-separated numbers, or @file.json (a JSON array); one that starts with "-" is written --vector=-0.1,…',
    )
    .option(
      '--filter <F>',
      `an attribute filter, repeatable: field=value (IN), field!=value (NOT_IN), field:OP:v1,v2 with OP one of ${FILTER_OPS.join(', ')}`,
      repeatable,
    )
    .option('--attributes <A,B>', 'attributes to print with each candidate')
    .option(
      '--page-size <N>',
      `candidates per page (default 10, at most ${SEARCH_LIMITS.pageSize})`,
      integerIn(1, SEARCH_LIMITS.pageSize),
    )
    .option('--page-token <T>', 'the next page of an earlier search (printed after each page)')
    .addOption(address)
    .option('--json', 'print the page as JSON');
  addDeprecatedAlias(command, address, '--target <HOST:PORT>', session.io);
  addClientFlags(command).addHelpText(
    'after',
    '\nExit status: 0 found, 1 the server refused or is down, 2 bad usage.',
  );
  lazyAction<SearchOptions>(command, session, async () => (await import('./search.js')).runSearch);
}
