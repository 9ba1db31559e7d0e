// The real process I/O behind CliIo: stdout/stderr streams and the file system.

import { readFile, writeFile } from 'node:fs/promises';
import type { CliIo } from './command.js';

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function processIo(): CliIo {
  return {
    stdout: (chunk) => {
      process.stdout.write(chunk);
    },
    stderr: (text) => {
      process.stderr.write(text);
    },
    readFile: (path) => (path === '-' ? readStdin() : readFile(path)),
    writeFile: (path, data) => writeFile(path, data),
  };
}
