/**
 * Turns the constraint violations the schema raises into errors a caller can act on: a duplicate is
 * ALREADY_EXISTS, a missing parent NOT_FOUND, a refused value INVALID_ARGUMENT naming its field
 * (CHECK constraints are named after the field they guard, see migrations.ts).
 */
import { isLatticeError, LatticeError } from '../../platform/errors.js';

/** The driver's error behind a LatticeError from the SQL adapters (pg and PGlite report the same). */
interface DriverFault {
  code?: unknown;
  constraint?: unknown;
  column?: unknown;
}

function driverFault(err: unknown): DriverFault | undefined {
  let current = err;
  // Translated errors wrap the adapter's, which wraps the driver's.
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    if (!isLatticeError(current)) return current as DriverFault;
    current = current.cause;
  }
  return undefined;
}

/** The SQLSTATE of a failed statement, when the database reported one. */
function sqlStateOf(err: unknown): string | undefined {
  const code = driverFault(err)?.code;
  return typeof code === 'string' ? code : undefined;
}

function constraintOf(err: unknown): string | undefined {
  const constraint = driverFault(err)?.constraint;
  return typeof constraint === 'string' ? constraint : undefined;
}

export interface ConstraintMessages {
  /** What a unique violation means here (`model product/m1 already exists`). */
  alreadyExists?: string;
  /** Foreign keys by constraint name: the request field that names the missing parent, and why. */
  missing?: Readonly<Record<string, { field: string; message: string }>>;
}

/** Runs one statement (or transaction) and translates its constraint violations. */
export async function withConstraintErrors<T>(
  work: () => Promise<T>,
  messages: ConstraintMessages = {},
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw translate(err, messages);
  }
}

function translate(err: unknown, messages: ConstraintMessages): unknown {
  const state = sqlStateOf(err);
  const constraint = constraintOf(err);
  const original = err instanceof Error ? err.message : String(err);
  switch (state) {
    case '23505':
      return new LatticeError('ALREADY_EXISTS', messages.alreadyExists ?? original, { cause: err });
    case '23503': {
      const missing = constraint === undefined ? undefined : messages.missing?.[constraint];
      if (missing === undefined) return err;
      return new LatticeError('NOT_FOUND', missing.message, { field: missing.field, cause: err });
    }
    case '23514':
      if (constraint === undefined) return err;
      return new LatticeError(
        'INVALID_ARGUMENT',
        `${constraint} has a value the database refuses: ${original}`,
        {
          field: constraint,
          cause: err,
        },
      );
    case '23502': {
      const column = driverFault(err)?.column;
      const field = typeof column === 'string' ? column : undefined;
      return new LatticeError('INVALID_ARGUMENT', `${field ?? 'a required field'} is missing: ${original}`, {
        field,
        cause: err,
      });
    }
    default:
      return err;
  }
}
