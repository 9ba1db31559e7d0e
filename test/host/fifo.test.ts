import { lstat, mkdir, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFifos, makeFifo, removeFifo } from '../../src/host/fifo.js';
import { failure, name, tempDirEachTest, value } from './helpers.js';

let dir: string;
tempDirEachTest((made) => {
  dir = made;
});

describe('console FIFO', () => {
  it('makes <run-dir>/fifo/<name> as a FIFO with mode 0640 in a 0700 directory; undo removes it', async () => {
    const made = value(await makeFifo(dir, name('user:web')));
    expect(made.value).toBe(path.join(dir, 'fifo', 'user:web'));
    const st = await lstat(made.value);
    expect(st.isFIFO()).toBe(true);
    expect(st.mode & 0o777).toBe(0o640);
    // Only petreld's user may open it: the directory keeps out the sockets' group.
    expect((await stat(path.join(dir, 'fifo'))).mode & 0o777).toBe(0o700);
    await made.undo();
    expect(await readdir(path.join(dir, 'fifo'))).toEqual([]);
  });

  it('reuses a FIFO already there and leaves it on undo', async () => {
    value(await makeFifo(dir, name(':a')));
    const again = value(await makeFifo(dir, name(':a')));
    await again.undo();
    expect((await lstat(again.value)).isFIFO()).toBe(true);
  });

  it('refuses a regular file or a symlink in its place, and removal leaves them alone', async () => {
    await mkdir(path.join(dir, 'fifo'));
    await writeFile(path.join(dir, 'fifo', ':file'), 'x');
    await symlink('/dev/null', path.join(dir, 'fifo', ':link'));
    const file = path.join(dir, 'fifo', ':file');
    expect(failure(await makeFifo(dir, name(':file'))).message).toBe(`file ${file} exists and is not a fifo`);
    expect(failure(await makeFifo(dir, name(':link'))).code).toBe('E_HOST_NOT_FIFO');
    expect(failure(await removeFifo(dir, name(':file'))).code).toBe('E_HOST_NOT_FIFO');
    expect((await stat(file)).isFile()).toBe(true);
  });

  it('lists FIFOs apart from other files, for start-up cleanup', async () => {
    expect(value(await listFifos(dir))).toEqual({ fifos: [], others: [] });
    value(await makeFifo(dir, name(':b')));
    value(await makeFifo(dir, name(':a')));
    await writeFile(path.join(dir, 'fifo', 'stray'), '');
    expect(value(await listFifos(dir))).toEqual({
      fifos: [path.join(dir, 'fifo', ':a'), path.join(dir, 'fifo', ':b')],
      others: [path.join(dir, 'fifo', 'stray')],
    });
    value(await removeFifo(dir, name(':a')));
    value(await removeFifo(dir, name(':a')));
    expect(value(await listFifos(dir)).fifos).toEqual([path.join(dir, 'fifo', ':b')]);
  });
});
