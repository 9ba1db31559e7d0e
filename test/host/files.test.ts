import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendDurably,
  createBlockFile,
  openNoFollow,
  removeBlockFile,
  writeFileAtomic,
} from '../../src/host/files.js';
import { UndoStack } from '../../src/host/undo.js';
import { printName } from '../../src/resources/name.js';
import { repo } from '../engine/guest.js';
import { failure, name, tempDirEachTest, value } from './helpers.js';

let dir: string;
tempDirEachTest((made) => {
  dir = made;
});

describe('atomic write', () => {
  it('replaces the content, leaves no temporary file, and undo restores the old content', async () => {
    const file = path.join(dir, 'state');
    await writeFile(file, 'old');
    await chmod(file, 0o640);
    const written = value(await writeFileAtomic(file, Buffer.from('new')));
    expect(await readFile(file, 'utf8')).toBe('new');
    expect(await readdir(dir)).toEqual(['state']);
    await written.undo();
    expect(await readFile(file, 'utf8')).toBe('old');
    expect((await stat(file)).mode & 0o777).toBe(0o640);
  });

  it('undo removes a file that did not exist before', async () => {
    const file = path.join(dir, 'fresh');
    const written = value(await writeFileAtomic(file, Buffer.from('x'), { mode: 0o644 }));
    expect((await stat(file)).mode & 0o777).toBe(0o644);
    await written.undo();
    expect(await readdir(dir)).toEqual([]);
  });

  it('keeps concurrent writes of different sizes apart (they share one staging buffer)', async () => {
    // Sizes from a few bytes to 3 MiB, so the staging buffer grows while others wait.
    const sizes = Array.from({ length: 24 }, (_, i) => (i % 6 === 5 ? 3 * 2 ** 20 + i : 10 * (i + 1) ** 3));
    const contents = sizes.map((size, i) => Buffer.alloc(size, i + 1));
    await Promise.all(contents.map((data, i) => writeFileAtomic(path.join(dir, `f${i}`), data).then(value)));
    for (const [i, data] of contents.entries()) {
      expect((await readFile(path.join(dir, `f${i}`))).equals(data)).toBe(true);
    }
  });

  it('appends durably, creating the file; a failed step is named', async () => {
    const file = path.join(dir, 'journal');
    value(await appendDurably(file, Buffer.from('one')));
    value(await appendDurably(file, Buffer.from('two')));
    expect(await readFile(file, 'utf8')).toBe('onetwo');
    const missing = path.join(dir, 'no-such-dir', 'state');
    const error = failure(await writeFileAtomic(missing, Buffer.from('x')));
    expect(error.code).toBe('E_HOST_IO');
    expect(error.message).toMatch(/^open .*no-such-dir\/\.state\.petrel-tmp-.* failed: ENOENT/u);
    expect(failure(await appendDurably(missing, Buffer.from('x'))).message).toMatch(
      /^create .*no-such-dir\/state failed: ENOENT/u,
    );
  });

  it('an append cut short by the file system is cut back: no torn tail stays', async () => {
    // A file size limit (RLIMIT_FSIZE) makes the second append's write stop part-way; the
    // compiled module runs in a child process that has the limit.
    const files = path.join(repo, 'dist', 'src', 'host', 'files.js');
    const file = path.join(dir, 'journal');
    const script = `process.on('SIGXFSZ', () => {});
      const { appendDurably } = await import(${JSON.stringify(files)});
      const first = await appendDurably(process.argv[2], Buffer.alloc(60, 0x61));
      const second = await appendDurably(process.argv[2], Buffer.alloc(60, 0x62));
      console.log(JSON.stringify([first.ok, second.ok ? 'ok' : second.error.message]));`;
    const scriptFile = path.join(dir, 'append.mjs');
    await writeFile(scriptFile, script);
    const run = spawnSync('prlimit', ['--fsize=100', process.execPath, scriptFile, file], {
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const [first, second] = JSON.parse(run.stdout) as [boolean, string];
    expect(first).toBe(true);
    expect(second).toMatch(/^(write|fdatasync) .*journal failed: .*EFBIG/u);
    expect(await readFile(file, 'utf8')).toBe('a'.repeat(60));
  });

  it('never shows a reader a partial file', async () => {
    const file = path.join(dir, 'big');
    const a = Buffer.alloc(4 << 20, 0x61);
    const b = Buffer.alloc(4 << 20, 0x62);
    await writeFile(file, a);
    let reading = true;
    const seen = new Set<string>();
    const reader = (async () => {
      while (reading) {
        const content = readFileSync(file);
        seen.add(content.equals(a) ? 'a' : content.equals(b) ? 'b' : `partial ${content.length}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (let i = 0; i < 6; i++) value(await writeFileAtomic(file, i % 2 === 0 ? b : a));
    reading = false;
    await reader;
    expect([...seen].filter((s) => s.startsWith('partial'))).toEqual([]);
    expect(seen.size).toBeGreaterThan(0);
  });

  it('on a failed rename leaves the target as it was and no temporary file', async () => {
    const target = path.join(dir, 'occupied');
    await mkdir(target);
    await writeFile(path.join(target, 'inside'), 'keep');
    const error = failure(await writeFileAtomic(target, Buffer.from('x')));
    expect(error.message).toMatch(/is not a regular file/);
    expect((await readdir(dir)).sort()).toEqual(['occupied']);
  });

  it('refuses to write through or over a symlink, and open refuses to follow one', async () => {
    const victim = path.join(dir, 'victim');
    await writeFile(victim, 'untouched');
    const link = path.join(dir, 'link');
    await symlink(victim, link);
    expect(failure(await writeFileAtomic(link, Buffer.from('x'))).code).toBe('E_HOST_SYMLINK');
    expect(failure(await openNoFollow(link, 0)).code).toBe('E_HOST_SYMLINK');
    expect(await readFile(victim, 'utf8')).toBe('untouched');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
  });

  it('works for the longest names (temporary names stay within NAME_MAX)', async () => {
    const long = name(['a', 'b', 'c', 'd'].map((c) => c.repeat(c === 'd' ? 56 : 63)).join(':'));
    const file = path.join(dir, `${printName(long)}.img`);
    expect(Buffer.byteLength(path.basename(file))).toBe(252);
    value(await writeFileAtomic(file, Buffer.from('ELF')));
    value(await writeFileAtomic(file, Buffer.from('ELF2')));
    const block = value(await createBlockFile(dir, long, 1));
    await value(await removeBlockFile(dir, long)).undo();
    expect(await readFile(block.value)).toHaveLength(1024 * 1024);
  });
});

describe('block device files', () => {
  it('creates a sparse file of exactly N MiB with mode 0600 in a 0700 directory; undo deletes it', async () => {
    const created = value(await createBlockFile(dir, name('user:disk'), 64));
    const st = await stat(created.value);
    expect(created.value).toBe(path.join(dir, 'block', 'user:disk'));
    expect(st.size).toBe(64 * 1024 * 1024);
    expect(st.blocks * 512).toBeLessThan(st.size);
    expect(st.mode & 0o777).toBe(0o600);
    expect((await stat(path.join(dir, 'block'))).mode & 0o777).toBe(0o700);
    await created.undo();
    expect(await readdir(path.join(dir, 'block'))).toEqual([]);
  });

  it('refuses an existing file (or symlink) and sizes below 1 MiB, creating nothing', async () => {
    value(await createBlockFile(dir, name('user:disk'), 1));
    expect(failure(await createBlockFile(dir, name('user:disk'), 1)).code).toBe('E_HOST_EXISTS');
    await symlink('/etc/passwd', path.join(dir, 'block', 'user:link'));
    expect(failure(await createBlockFile(dir, name('user:link'), 1)).code).toBe('E_HOST_EXISTS');
    expect(failure(await createBlockFile(dir, name('user:zero'), 0)).message).toBe(
      'overflow while computing bytes',
    );
    expect((await readdir(path.join(dir, 'block'))).sort()).toEqual(['user:disk', 'user:link']);
  });

  it('removes in two phases: undo brings the data back, commit deletes it', async () => {
    const file = value(await createBlockFile(dir, name('user:disk'), 1)).value;
    await writeFile(file, 'data');
    const removed = value(await removeBlockFile(dir, name('user:disk')));
    await expect(stat(file)).rejects.toThrow();
    await removed.undo();
    expect(await readFile(file, 'utf8')).toBe('data');

    const again = value(await removeBlockFile(dir, name('user:disk')));
    await again.commit?.();
    expect(await readdir(path.join(dir, 'block'))).toEqual([]);
  });

  it('refuses to remove a symlink', async () => {
    await mkdir(path.join(dir, 'block'));
    await symlink('/etc/passwd', path.join(dir, 'block', 'user:link'));
    expect(failure(await removeBlockFile(dir, name('user:link'))).code).toBe('E_HOST_SYMLINK');
  });
});

describe('undo stack', () => {
  it('runs every undo newest first and collects failures instead of stopping', async () => {
    const order: string[] = [];
    const stack = new UndoStack();
    stack.push('a', async () => {
      order.push('a');
    });
    stack.push('b', async () => {
      throw new Error('boom');
    });
    stack.push('c', async () => {
      order.push('c');
    });
    const errors = await stack.rollback();
    expect(order).toEqual(['c', 'a']);
    expect(errors.map((e) => e.message)).toEqual(['undo of b failed: boom']);
    expect(await stack.rollback()).toEqual([]);
  });

  it('commit forgets the undos and runs the commit actions', async () => {
    const order: string[] = [];
    const stack = new UndoStack();
    stack.add('x', {
      value: 1,
      undo: async () => {
        order.push('undo');
      },
      commit: async () => {
        order.push('commit');
      },
    });
    expect(await stack.commit()).toEqual([]);
    expect(await stack.rollback()).toEqual([]);
    expect(order).toEqual(['commit']);
  });
});
