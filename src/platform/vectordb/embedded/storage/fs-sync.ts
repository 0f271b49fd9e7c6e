/** The two fsync steps every file this engine commits needs: the file's bytes, and its directory entry. */
import { open } from 'node:fs/promises';

/** Writes `bytes` to `path` (replacing it) and fsyncs the file. */
export async function writeDurably(path: string, bytes: Uint8Array | string): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Fsyncs a directory, so entries created, renamed or removed in it survive a power loss. */
export async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
