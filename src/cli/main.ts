import { describeError, isLatticeError, type LatticeError } from '../platform/errors.js';
import { runLattice } from './program.js';

// A reader that stops early (`lattice logs decode | head`) closes the pipe: that ends the output,
// it is not an error worth a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

runLattice(process.argv.slice(2)).then(
  (status) => {
    process.exitCode = status;
  },
  (err: unknown) => {
    // Errors a user can act on print their message alone; anything else keeps its stack.
    console.error(`lattice: ${isLatticeError(err) ? `${err.message}${nextStep(err)}` : describeError(err)}`);
    if (!isLatticeError(err) && err instanceof Error) console.error(err.stack);
    process.exit(1);
  },
);

/** For a server that did not answer, what to do about it, unless the message already names a command. */
function nextStep(err: LatticeError): string {
  if (err.code !== 'UNAVAILABLE' && err.code !== 'DEADLINE_EXCEEDED') return '';
  if (err.message.includes('lattice ') || /\bstart\b/i.test(err.message)) return '';
  return (
    '\nIs it running? Start it, or point the settings at where it runs: "lattice settings" shows them, ' +
    '"lattice check" tries every configured adapter.'
  );
}
