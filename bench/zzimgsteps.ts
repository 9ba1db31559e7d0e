import diagnostics from 'node:diagnostics_channel';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { TRANSACTION_CHANNEL, type TransactionEvent } from '../src/engine/events.js';
import { canaryImage } from '../test/engine/guest.js';
import { canaryConfig, createCommand, makeEngine, name } from '../test/engine/harness.js';
function bigImage(canary: Buffer, seed: number, mb: number): Buffer {
  const tail = Buffer.alloc(mb * 1000 * 1000);
  let block = createHash('sha256').update(`petrel-bench-${seed}`).digest();
  for (let at = 0; at < tail.length; at += block.length) { block.copy(tail, at); block = createHash('sha256').update(block).digest(); }
  return Buffer.concat([canary, tail]);
}
const t = await makeEngine({ stopTimeoutMs: 2_000 });
let marks: [string, number][] = [];
diagnostics.subscribe(TRANSACTION_CHANNEL, (m) => { marks.push([(m as TransactionEvent).step, performance.now()]); });
const canary = await readFile(canaryImage);
try {
  for (let i = 0; i < 40; i++) {
    const config = await canaryConfig(canaryImage, ['wait', `img${i}`], { image: bigImage(canary, i, 8) });
    marks = [['sent', performance.now()]];
    await t.engine.execute({ name: name(`:img${i}`), command: createCommand(config) });
    marks.push(['answered', performance.now()]);
    console.log(i, (marks.at(-1)![1] - marks[0]![1]).toFixed(1), marks.slice(1).map(([s, at], k) => `${s}=${(at - marks[k]![1]).toFixed(1)}`).join(' '));
  }
} finally { await t.close(); }
