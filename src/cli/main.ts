import { describeError, isLatticeError } from '../platform/errors.js';
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
    console.error(`lattice: ${isLatticeError(err) ? err.message : describeError(err)}`);
    if (!isLatticeError(err) && err instanceof Error) console.error(err.stack);
    process.exit(1);
  },
);
