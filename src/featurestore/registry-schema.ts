import { z } from 'zod';

/**
 * The feature registry document, as written in a JSON or YAML file or built in code: entities, each
 * with its key schema and feature groups of typed features. Lists (not maps) keep the order explicit:
 * the order of a group's features is the order of their values in storage, so features may be
 * appended to a group but not removed or reordered without reloading that group.
 *
 * ```yaml
 * entities:
 *   - name: user
 *     keys: [user_id]
 *     ttl_seconds: 86400            # optional: rows expire this long after their last write
 *     feature_groups:
 *       - name: profile
 *         features:
 *           - { name: age, data_type: FP32, default: 30 }
 *           - { name: embedding, data_type: FP32_VECTOR, vector_dim: 8 }
 * ```
 */

/** Entity, key, group and feature names: no `:` (column names join them with it), `|` or `@`. */
const name = z
  .string()
  .regex(
    /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/,
    'must start with a letter, digit or _ and hold only letters, digits, _ . -',
  );

/** A default value: a JSON value of the feature's type (number, string, boolean or array of them). */
const defaultValue = z.union([
  z.number(),
  z.string(),
  z.boolean(),
  z.array(z.union([z.number(), z.string(), z.boolean()])),
]);

export const featureDocumentSchema = z.strictObject({
  name,
  /** A data type name in any spelling `parseDataType` accepts: `FP32`, `DATA_TYPE_FP32`, `DataTypeFP32`. */
  data_type: z.string().min(1),
  /** Elements of a vector type; 0 (or absent) = any length. Must be 0 for scalars. */
  vector_dim: z.number().int().min(0).optional(),
  /** Served for a missing value; the type's zero value when absent. */
  default: defaultValue.optional(),
  description: z.string().optional(),
});

export const featureGroupDocumentSchema = z.strictObject({
  name,
  features: z.array(featureDocumentSchema).min(1),
  description: z.string().optional(),
});

export const entityDocumentSchema = z.strictObject({
  name,
  /** Names of the key parts, in the order queries and files give them. */
  keys: z.array(name).min(1),
  /** Rows expire this many seconds after their last write; never when absent. */
  ttl_seconds: z.number().int().positive().optional(),
  feature_groups: z.array(featureGroupDocumentSchema).min(1),
  description: z.string().optional(),
});

export const registryDocumentSchema = z.strictObject({
  entities: z.array(entityDocumentSchema),
});

export type FeatureDocument = z.input<typeof featureDocumentSchema>;
export type FeatureGroupDocument = z.input<typeof featureGroupDocumentSchema>;
export type EntityDocument = z.input<typeof entityDocumentSchema>;
export type RegistryDocument = z.input<typeof registryDocumentSchema>;
export type DefaultValue = z.infer<typeof defaultValue>;
