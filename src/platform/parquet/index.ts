export { type OpenParquetFile, openParquetFile } from './parquet-file.js';
export { plainValue } from './plain-value.js';
