// A line of 8 MiB (the issue asks for 1 MiB; more shows growth better) without a newline, through the engine's real console path (FIFO, reader,
// ring): it is cut once, marked, the rest up to its newline is dropped, and the reader's memory
// does not follow the line. The "tender" is a shell script standing in for a guest that prints
// such a line (no canary mode does).
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { READ_SIZE } from '../../src/console/lines.js';
import { build, canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand, makeEngine, name, replyText, waitForLine } from '../engine/harness.js';
import { keptHere } from '../memory.js';

/** The line's length: 8 MiB of 'x' before its newline. */
const LINE_BYTES = 8 * 1024 * 1024;

describe('a very long console line', () => {
  it('is cut once at 512 bytes and marked; what follows its newline arrives', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'petrel-long-'));
    const tender = path.join(dir, 'long-line-hvt');
    await writeFile(
      tender,
      `#!/bin/sh\ncase "$1" in --version) exec '${build}/petrel-hvt' --version;; esac\n` +
        `head -c ${LINE_BYTES} /dev/zero | tr '\\0' x\necho\necho petrel-canary after\nexec sleep 30\n`,
    );
    await chmod(tender, 0o755);
    // This TEST DOUBLE runs a pipeline (head | tr), and a jail allows no fork: it runs unjailed.
    const t = await makeEngine({ tenderHvt: tender, jail: false });
    try {
      // What the first VM of a process sets up once (the spawner, the file thread and its
      // staging buffer) is not what this test measures.
      const warm = await t.run(':warm', createCommand(await canaryConfig(canaryImage, ['wait', 'x'])));
      expect(replyText(warm)).toBe('created unikernel');
      const before = await keptHere();
      const created = await t.run(':long', createCommand(await canaryConfig(canaryImage, ['wait', 'x'])));
      expect(replyText(created)).toBe('created unikernel');
      await waitForLine(t.hub, ':long', 'petrel-canary after');
      const lines =
        t.hub
          .ring(name(':long'))
          ?.last(10)
          .map((l) => Buffer.from(l.line).toString()) ?? [];
      expect(lines).toEqual([`${'x'.repeat(READ_SIZE)} [truncated]`, 'petrel-canary after']);
      // Far less than the line would take if it were kept (the ring holds 525 bytes of it): an
      // eighth of it, sampled after collections (test/memory.ts); what a second VM's own
      // structures add was seen at 0.2-0.5 MiB on a shared machine.
      expect((await keptHere()) - before, 'bytes kept after the line').toBeLessThan(LINE_BYTES / 8);
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
