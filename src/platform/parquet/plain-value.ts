/**
 * An Arrow cell as a plain JavaScript value: numbers, bigints (INT64), strings, booleans, arrays
 * (LIST), `Uint8Array` (BYTE_ARRAY), `Date` (DATE, TIMESTAMP), objects (STRUCT, MAP), `null`: what
 * the row decoders of the feature store's loader and vss's jobs take.
 */
import { DataType, util, type Vector } from 'apache-arrow';

export function plainValue(value: unknown, type: DataType): unknown {
  if (value === null || value === undefined) return null;
  if (DataType.isDictionary(type)) return plainValue(value, type.dictionary);
  if (DataType.isList(type) || DataType.isFixedSizeList(type) || DataType.isLargeList(type)) {
    const childType = type.children[0]!.type;
    return Array.from(value as Vector, (item) => plainValue(item, childType));
  }
  if (DataType.isTimestamp(type) || DataType.isDate(type)) return new Date(Number(value));
  if (DataType.isDecimal(type)) {
    return util.bigNumToNumber(value as Parameters<typeof util.bigNumToNumber>[0], type.scale);
  }
  if (DataType.isStruct(type) || DataType.isMap(type)) return (value as { toJSON(): unknown }).toJSON();
  return value;
}
