// The shared data-type kernel: the DataType enum, value byte codecs (fp8/fp16/bool/vectors, 64-bit
// integers exact), conversions and value text. The orchestrator, the feature store and the model
// server all speak these encodings, so they live below every service.
export {
  checkValueLength,
  type DecodedValue,
  decodeValue,
  defaultValue,
  type EncodableValue,
  encodeValue,
  type ScalarValue,
} from './codecs.js';
export { type ConvertOptions, convertNumbers, convertValue } from './convert.js';
export { copyElementRuns, type ElementRuns } from './copy-runs.js';
export {
  allDataTypes,
  DataType,
  type DataTypeInfo,
  type DataTypeKind,
  dataTypeInfo,
  fixedWidth,
  lookupDataType,
  parseDataType,
} from './data-type.js';
export {
  type NumberArray,
  type NumberWriteOptions,
  readNumbers,
  runBytes,
  writeNumbers,
} from './number-runs.js';
export { formatValue, parseValue } from './value-text.js';
