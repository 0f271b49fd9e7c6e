import { createReadStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** One line of a text file, 1-based, without its line ending. */
export interface TextLine {
  line: number;
  text: string;
}

/**
 * Reads a JSON Lines file as batches of non-blank lines (LF or CRLF endings); `onBytes` is told the
 * bytes read so far.
 */
export async function* readLines(
  file: string,
  options: { onBytes?: (bytes: number) => void } = {},
): AsyncGenerator<TextLine[]> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let line = 0;
  let bytes = 0;
  const split = (text: string, final: boolean): TextLine[] => {
    const out: TextLine[] = [];
    const parts = text.split('\n');
    const last = final ? undefined : parts.pop();
    for (const part of parts) {
      line++;
      const body = part.endsWith('\r') ? part.slice(0, -1) : part;
      if (body.trim() !== '') out.push({ line, text: line === 1 ? body.replace(/^\uFEFF/, '') : body });
    }
    pending = last ?? '';
    return out;
  };
  for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) {
    const buffer = chunk as Buffer;
    bytes += buffer.length;
    options.onBytes?.(bytes);
    const lines = split(pending + decoder.write(buffer), false);
    if (lines.length > 0) yield lines;
  }
  const lines = split(pending + decoder.end(), true);
  if (lines.length > 0) yield lines;
}
