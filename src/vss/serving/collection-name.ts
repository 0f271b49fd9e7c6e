/**
 * The one naming rule for vector DB collections: one collection per model version, shared by every
 * variant of the model (variant membership is a payload flag). Ingestion creates and fills the
 * collection under this name; serving searches it.
 */

/** Separates the parts; entity and model names cannot contain two underscores in a row at the end. */
const SEPARATOR = '__';

/**
 * `<entity>__<model>__v<version>`, e.g. `catalog__clip__v3`. Entity and model names are path-safe
 * (letters, digits, `_`, `-`, `.`; starting with a letter or digit), which the vector DB's collection
 * names accept.
 */
export function collectionName(entity: string, modelName: string, version: number): string {
  return `${entity}${SEPARATOR}${modelName}${SEPARATOR}v${version}`;
}
