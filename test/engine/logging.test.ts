// What the engine logs at info: every change and every refusal, not the queries and policy
// re-installs a TLS session makes on every connection (those are at debug).
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { makePolicy } from '../../src/resources/policy.js';
import { canaryImage } from './guest.js';
import { canaryConfig, createCommand, makeEngine, type TestEngine } from './harness.js';

let t: TestEngine;
let lines: { level: number; msg: string; command: string }[];

beforeEach(async () => {
  lines = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  t = await makeEngine({ log: pino({ level: 'info' }, sink) });
});
afterEach(async () => {
  await t.close();
});

const commandLines = () => lines.filter((l) => l.msg === 'command done' || l.msg === 'command refused');

describe('engine log at info', () => {
  it('has changes and refusals, not queries or an unchanged policy', async () => {
    const policy = unwrap(makePolicy({ vms: 2, memory: 64, cpuids: [0], block: null, bridges: [] }));
    await t.run('alice:', { type: 'policy-add', policy });
    await t.run('alice:', { type: 'policy-add', policy }); // unchanged: a TLS session's re-install
    await t.run('alice:', { type: 'policy-info' });
    await t.run('alice:', { type: 'unikernel-info', release: '2.7' });
    await t.run('alice:vm', createCommand(await canaryConfig(canaryImage, ['wait', 'x'])));
    await t.run('alice:vm', { type: 'unikernel-get', level: 0 });
    await t.run('alice:nope', { type: 'unikernel-destroy' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(commandLines().map((l) => [l.msg, l.command])).toEqual([
      ['command done', 'policy-add'],
      ['command done', 'unikernel-create'],
      ['command refused', 'unikernel-destroy'],
    ]);
  });
});
