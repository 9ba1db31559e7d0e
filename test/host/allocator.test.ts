// native/build/allocator.node (src/host/allocator.ts): with it loaded, memory that Buffers took
// from malloc goes back to the kernel once they are collected; without it, glibc keeps it after
// one large buffer has come and gone (the reason the addon exists). Each case runs in a node
// process of its own, since loading the addon changes malloc for the whole process. What is kept
// is compared with the 40 MiB the buffers took (test/memory.ts), sampled once they are freed.
import { execFileSync } from 'node:child_process';
import { describe, expect, it, vi } from 'vitest';
import { loadAllocator, trimAllocator } from '../../src/host/allocator.js';
import { bundledNativePath } from '../../src/host/native.js';

/** What the buffers took from malloc, KiB: 40 of 1 MiB (after one of 8 MiB that raised glibc's threshold). */
const TAKEN = 40 * 1024;

/**
 * V8 frees a collected Buffer's memory on a background thread after the collection, so on a busy
 * machine trim() could run before anything was freed. Sweeping in the collection itself makes
 * the memory free when gc() returns: the heap is then measured after the free, every time.
 */
const NODE_FLAGS = ['--expose-gc', '--no-concurrent-array-buffer-sweeping', '--single-threaded-gc'];

/** malloc's heap ([heap] of smaps, KiB) before and after: one 8 MiB buffer, then 40 of 1 MiB, all freed. */
const SCRIPT = `
const fs = require('node:fs');
const heap = () => Number(/\\[heap\\]\\n(?:.*\\n)*?Rss:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/smaps', 'utf8'))?.[1] ?? 0);
let trim = () => false;
if (process.env.ADDON) { const m = { exports: {} }; process.dlopen(m, process.env.ADDON); trim = m.exports.trim; }
const before = heap();
let big = Buffer.alloc(8 << 20, 1); big = null; gc();
let kept = []; for (let i = 0; i < 40; i++) kept.push(Buffer.alloc(1 << 20, 1)); kept = null; gc(); trim();
console.log(JSON.stringify({ before, after: heap() }));
`;

function heapAround(addon: string | null): { before: number; after: number } {
  const env = { ...process.env, ...(addon === null ? {} : { ADDON: addon }) };
  return JSON.parse(execFileSync(process.execPath, [...NODE_FLAGS, '-e', SCRIPT], { env, encoding: 'utf8' }));
}

describe('allocator addon', () => {
  const addon = bundledNativePath('allocator.node');

  it('is built and loads', () => {
    expect(addon).not.toBeNull();
    expect(loadAllocator(addon)).toBeNull();
    expect(typeof trimAllocator()).toBe('boolean');
  });

  it('says which file it could not load and how to build it', async () => {
    vi.resetModules();
    const fresh = await import('../../src/host/allocator.js');
    const why = fresh.loadAllocator('/nonexistent/allocator.node');
    expect(why).toContain('/nonexistent/allocator.node');
    expect(why).toContain('make -C native');
    expect(fresh.trimAllocator()).toBe(false);
  });

  it('gives freed buffers back to the kernel', () => {
    const { before, after } = heapAround(addon);
    expect(after - before, 'KiB of the heap kept after the buffers were freed').toBeLessThan(TAKEN / 10);
  });

  it('without it, glibc keeps them (what it is for)', () => {
    const { before, after } = heapAround(null);
    expect(after - before, 'KiB of the heap kept after the buffers were freed').toBeGreaterThan(TAKEN / 2);
  });
});
