/**
 * The one naming rule for vector DB collections: one collection per model version, shared by every
 * variant of the model (variant membership is a payload flag). Ingestion creates and fills the
 * collection under this name; serving searches it.
 */
import { createHash } from 'node:crypto';

/** Separates the parts of a plain name. */
const SEPARATOR = '__';

/**
 * Longest name returned: the vector DB port accepts 200 characters (Qdrant 255 bytes, and the
 * embedded engine uses the name as a directory name).
 */
const MAX_LENGTH = 200;

/**
 * A part a plain name can hold unambiguously: it starts with a letter or digit and never has two
 * underscores in a row (it may end with one: the separator after it is still found, because the
 * next part starts with a letter or digit).
 */
const PLAIN_PART = /^[A-Za-z0-9](?:[A-Za-z0-9.-]|_(?!_))*$/;

/**
 * The collection of one model version. Distinct (entity, model, version) triples always get distinct
 * names, all valid for both vector databases (letters, digits, `_`, `-`, `.`; at most 200):
 *
 * - plain, the rule every existing collection was created under: `<entity>__<model>__v<version>`,
 *   e.g. `catalog__clip__v3`, when neither name contains `__` (nor starts with `_`);
 * - escaped, when one does (`x__y` + `z` and `x` + `y__z` would both be `x__y__z__v1`): the entity's
 *   length in front, `_<length>_<entity>__<model>__v<version>`, e.g. `_4_x__y__z__v1` and
 *   `_1_x__y__z__v1`. The length says where the entity ends, the version is after the last `__v`,
 *   and the leading `_` (never the first character of a plain name) tells the forms apart;
 * - hashed, when the name would exceed 200 characters: `_h<32 hex digits of SHA-256 over the three
 *   parts>__<entity, cut>__<model, cut>__v<version>`, readable prefixes with the hash deciding.
 */
export function collectionName(entity: string, modelName: string, version: number): string {
  const tail = `${SEPARATOR}${modelName}${SEPARATOR}v${version}`;
  const name =
    PLAIN_PART.test(entity) && PLAIN_PART.test(modelName)
      ? `${entity}${tail}`
      : `_${entity.length}_${entity}${tail}`;
  if (name.length <= MAX_LENGTH) return name;
  const hash = createHash('sha256')
    .update(JSON.stringify([entity, modelName, version]))
    .digest('hex')
    .slice(0, 32);
  return `_h${hash}${SEPARATOR}${entity.slice(0, 60)}${SEPARATOR}${modelName.slice(0, 60)}${SEPARATOR}v${version}`;
}
