/**
 * A FAILED operation is superseded when a later operation has made a newer version of its model
 * serve: a retry would write (and flip to) a version older than the one its variants now serve, so
 * every event it published would be refused by the consumers and its flip would fail. Such a retry
 * is refused (FAILED_PRECONDITION: the API's 409) with what was found and what to do instead.
 */
import { LatticeError } from '../../../platform/errors.js';
import type { Operation, VssRepositories } from '../../store/index.js';
import { operationVariants, variantVersionMap } from './steps/operation-targets.js';

/** The version the operation writes or indexes, if it has one (promotions copy what is served). */
function writtenVersion(operation: Operation): number | undefined {
  const version = operation.result?.version;
  if (typeof version === 'number') return version;
  const versions = Object.values(variantVersionMap(operation));
  return versions.length === 0 ? undefined : Math.max(...versions);
}

/** Throws FAILED_PRECONDITION when a variant the operation drives serves a newer version than it writes. */
export async function refuseSuperseded(r: VssRepositories, operation: Operation): Promise<void> {
  const version = writtenVersion(operation);
  if (version === undefined) return;
  const names = new Set(operationVariants(operation));
  const newer = (await r.variants.list(operation)).filter(
    (v) => names.has(v.variant) && v.readVersion !== null && v.readVersion > version,
  );
  if (newer.length === 0) return;
  const served = Math.max(...newer.map((v) => v.readVersion!));
  const later = (await r.operations.list({ entity: operation.entity, modelName: operation.modelName })).find(
    (op) => op.status === 'SUCCEEDED' && op.result?.version === served && op.kind !== 'DELTA_MODEL',
  );
  const model = `${operation.entity}/${operation.modelName}`;
  const instead =
    operation.kind === 'DELTA_MODEL'
      ? `submit a new delta (POST /reset-model with "model_type": "DELTA", or lattice vss reset --entity ${operation.entity} --model ${operation.modelName} --model-type DELTA), which loads into version ${served}`
      : `submit a new reset (POST /reset-model, or lattice vss reset --entity ${operation.entity} --model ${operation.modelName}) to ingest fresh data into a new version`;
  throw new LatticeError(
    'FAILED_PRECONDITION',
    `operation ${operation.operationId} (${operation.kind}) would write version ${version} of model ${model}, but ${newer
      .map((v) => `variant ${v.variant}`)
      .join(
        ', ',
      )} now serves version ${served}${later === undefined ? '' : `, made READY by operation ${later.operationId} (${later.kind})`}: it is superseded and cannot be retried; ${instead}`,
    { field: 'operation_id' },
  );
}
