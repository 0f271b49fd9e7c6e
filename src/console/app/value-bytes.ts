/**
 * Decodes value bytes as the proto3 JSON mapping carries them (base64) into text for the playground's
 * tables and commands. The layout is the platform's (src/datatypes/codecs.ts): little-endian numbers,
 * vectors back to back, BOOL one byte, BOOL_VECTOR bit-packed, STRING UTF-8, STRING_VECTOR each
 * element length-prefixed (4 bytes LE). The console cannot import that module (it reaches Node-only
 * code), so this holds only the reading side, for display.
 */

const WIDTH: Record<string, [number, (v: DataView, at: number) => number | bigint]> = {
  FP16: [2, (v, at) => fp16(v.getUint16(at, true))],
  FP32: [4, (v, at) => v.getFloat32(at, true)],
  FP64: [8, (v, at) => v.getFloat64(at, true)],
  INT8: [1, (v, at) => v.getInt8(at)],
  INT16: [2, (v, at) => v.getInt16(at, true)],
  INT32: [4, (v, at) => v.getInt32(at, true)],
  INT64: [8, (v, at) => v.getBigInt64(at, true)],
  UINT8: [1, (v, at) => v.getUint8(at)],
  UINT16: [2, (v, at) => v.getUint16(at, true)],
  UINT32: [4, (v, at) => v.getUint32(at, true)],
  UINT64: [8, (v, at) => v.getBigUint64(at, true)],
};

function fp16(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const number = (n: number | bigint): string =>
  typeof n === 'bigint' ? n.toString() : Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(7)));

/** The value as text (vectors as `[a, b, …]`); the bytes' length when the type is not one it reads. */
export function valueText(dataType: string, base64: string): string {
  // The proto3 JSON mapping names enum values in full (DATA_TYPE_FP32); the platform's names are short.
  const type = dataType.replace(/^DATA_TYPE_/, '');
  const bytes = fromBase64(base64);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (type === 'STRING') return new TextDecoder().decode(bytes);
  if (type === 'BOOL') return bytes[0] ? 'true' : 'false';
  const vector = type.endsWith('_VECTOR');
  const element = vector ? type.slice(0, -'_VECTOR'.length) : type;
  if (element === 'STRING') {
    const items: string[] = [];
    for (let at = 0; at + 4 <= bytes.length; ) {
      const length = view.getUint32(at, true);
      items.push(new TextDecoder().decode(bytes.subarray(at + 4, at + 4 + length)));
      at += 4 + length;
    }
    return JSON.stringify(items);
  }
  if (element === 'BOOL')
    return `[${Array.from({ length: bytes.length * 8 }, (_, i) => ((bytes[i >> 3]! >> (i & 7)) & 1 ? 1 : 0)).join('')}]`;
  const reader = WIDTH[element];
  if (reader === undefined) return `(${bytes.length} bytes of ${type})`;
  const [width, read] = reader;
  const values: string[] = [];
  for (let at = 0; at + width <= bytes.length; at += width) values.push(number(read(view, at)));
  return vector ? `[${values.join(', ')}]` : (values[0] ?? '');
}

/** The scalar types the playground's form writes (what `lattice predict --schema` offers most). */
export const FORM_TYPES = ['STRING', 'FP32', 'FP64', 'INT32', 'INT64', 'BOOL'] as const;
export type FormType = (typeof FORM_TYPES)[number];

/** `text` as value bytes of `type`, base64 as the proto3 JSON mapping carries `bytes`. */
export function encodeValue(type: FormType, text: string): string {
  let bytes: Uint8Array;
  if (type === 'STRING') bytes = new TextEncoder().encode(text);
  else if (type === 'BOOL') bytes = new Uint8Array([text.trim() === 'true' || text.trim() === '1' ? 1 : 0]);
  else {
    const width = type === 'FP32' || type === 'INT32' ? 4 : 8;
    bytes = new Uint8Array(width);
    const view = new DataView(bytes.buffer);
    if (type === 'FP32') view.setFloat32(0, Number(text), true);
    else if (type === 'FP64') view.setFloat64(0, Number(text), true);
    else if (type === 'INT32') view.setInt32(0, Number.parseInt(text, 10), true);
    else view.setBigInt64(0, BigInt(text.trim()), true);
  }
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
