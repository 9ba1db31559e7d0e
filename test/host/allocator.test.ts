// native/build/allocator.node (src/host/allocator.ts): with it loaded, memory that Buffers took
// from malloc goes back to the kernel once they are collected; without it, glibc keeps it after
// one large buffer has come and gone (the reason the addon exists). Each case runs in a node
// process of its own, since loading the addon changes malloc for the whole process.
import { execFileSync } from 'node:child_process';
import { describe, expect, it, vi } from 'vitest';
import { loadAllocator, trimAllocator } from '../../src/host/allocator.js';
import { bundledNativePath } from '../../src/host/native.js';

const MIB = 1024;

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
  return JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', SCRIPT], { env, encoding: 'utf8' }));
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
    expect(after - before).toBeLessThan(4 * MIB);
  });

  it('without it, glibc keeps them (what it is for)', () => {
    const { before, after } = heapAround(null);
    expect(after - before).toBeGreaterThan(16 * MIB);
  });
});
