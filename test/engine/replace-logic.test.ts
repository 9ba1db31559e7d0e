// The pure parts of replace (Petrel (m)) and its checker: what a start does with pending
// replacements, the state format's pending records (version 1 unchanged, version 2 round-trips,
// a journal cut at any byte), the checks' validation, and the HTTP, TCP and console checks
// against real servers on loopback and a real console hub.

import { once } from 'node:events';
import { createServer as createHttp } from 'node:http';
import { createServer as createTcp, type Server } from 'node:net';
import { describe, expect, test } from 'vitest';
import { ConsoleHub } from '../../src/console/hub.js';
import { runCheck } from '../../src/engine/liveness.js';
import { resolveReplacements } from '../../src/engine/pending-replacements.js';
import { unwrap } from '../../src/resources/errors.js';
import { livenessCheck, parseWithin } from '../../src/resources/liveness.js';
import type { Label, Name } from '../../src/resources/name.js';
import { decodeWire, encodeWire } from '../../src/wire/message.js';
import {
  decodeSnapshot,
  encodeEntry,
  encodeSnapshot,
  loadPetrelState,
  type PetrelState,
  type StateChange,
  type UnikernelRecord,
} from '../../src/wire/petrel-state.js';
import type { Command } from '../../src/wire/types.js';
import { cmd, MINIMAL_CONFIG, name, ok, wire } from '../wire/helpers.js';

const { image: _image, ...kept } = MINIMAL_CONFIG;
const digest = (n: number) => n.toString(16).padStart(2, '0').repeat(32);
const record = (text: string, n: number, args: string[] = []): UnikernelRecord => ({
  name: name(text),
  config: { ...kept, arguments: args },
  image: { digest: digest(n), size: 1000 + n },
});
const pending = (text: string, n: number, passed: boolean) => ({
  name: name(text),
  previous: { config: { ...kept, arguments: ['old'] }, image: { digest: digest(n), size: 1000 + n } },
  passed,
});

describe('pending replacements at start', () => {
  test('rolled back unless passed; moot when the unikernel is gone; others untouched', () => {
    const state: PetrelState = {
      unikernels: [record(':a', 2, ['new']), record(':b', 4, ['new']), record(':c', 6)],
      policies: [],
      imported: [],
      replacements: [pending(':a', 1, false), pending(':b', 3, true), pending(':gone', 5, false)],
    };
    const { state: after, outcomes } = resolveReplacements(state);
    expect(after.replacements).toBeUndefined();
    expect(after.unikernels.map((u) => [u.name.label, u.image.digest, u.config.arguments])).toEqual([
      ['a', digest(1), ['old']],
      ['b', digest(4), ['new']],
      ['c', digest(6), []],
    ]);
    expect([...outcomes].sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { name: ':a', outcome: 'rolled-back' },
      { name: ':b', outcome: 'kept' },
      { name: ':gone', outcome: 'moot' },
    ]);
    const none: PetrelState = { unikernels: [record(':a', 1)], policies: [], imported: [] };
    expect(resolveReplacements(none)).toEqual({ state: none, outcomes: [] });
  });
});

describe('the state format with pending replacements', () => {
  const base: PetrelState = { unikernels: [record(':a', 2)], policies: [], imported: [] };

  test('a state without one is a version 1 snapshot, byte for byte; with one, version 2 round-trips', () => {
    const v1 = ok(encodeSnapshot(base));
    expect(Buffer.from(ok(encodeSnapshot({ ...base, replacements: [] })))).toEqual(Buffer.from(v1));
    expect(ok(decodeSnapshot(v1))).toEqual(base);
    const withOne = { ...base, replacements: [pending(':a', 1, false)] };
    const v2 = ok(encodeSnapshot(withOne));
    expect(v2).not.toEqual(v1);
    expect(ok(decodeSnapshot(v2))).toEqual(withOne);
    // The version INTEGER is the snapshot's first element: 1, then 2.
    expect(Buffer.from(v1).includes(Buffer.from([0x02, 0x01, 0x01]))).toBe(true);
    expect(Buffer.from(v2).includes(Buffer.from([0x02, 0x01, 0x02]))).toBe(true);
  });

  test('journal entries put, mark passed and clear it; a journal cut at any byte reads as whole entries', () => {
    const steps: StateChange[][] = [
      [{ kind: 'put-replacement', replacement: pending(':a', 1, false) }],
      [{ kind: 'put-unikernel', record: record(':a', 3) }],
      [{ kind: 'put-replacement', replacement: pending(':a', 1, true) }],
      [{ kind: 'remove-replacement', name: name(':a') }],
    ];
    const entries = steps.map((c) => ok(encodeEntry(c)));
    const journal = Buffer.concat(entries);
    const snapshot = ok(encodeSnapshot(base));
    const expected = [
      undefined,
      [false, digest(2)],
      [false, digest(3)],
      [true, digest(3)],
      [undefined, digest(3)],
    ];
    let whole = 0;
    for (let cut = 0; cut <= journal.length; cut++) {
      while (whole < entries.length && entries.slice(0, whole + 1).reduce((n, e) => n + e.length, 0) <= cut)
        whole++;
      const { state } = ok(loadPetrelState(snapshot, journal.subarray(0, cut)));
      const seen = [state.replacements?.[0]?.passed, state.unikernels[0]?.image.digest];
      expect(seen, `cut at ${cut}`).toEqual(expected[whole] ?? [undefined, digest(2)]);
    }
  });
});

describe('the replace command on the wire', () => {
  test('[3][29] round-trips each probe, and a create without a check keeps its own tag', () => {
    const config = { ...MINIMAL_CONFIG };
    for (const probe of [
      { kind: 'http', url: 'http://10.0.0.2/health' },
      { kind: 'tcp', host: '::1', port: 80 },
      { kind: 'console', regex: '^ready$' },
    ] as const) {
      const command: Command = {
        type: 'unikernel-create',
        force: true,
        release: '2.7',
        config,
        check: { probe, withinMs: 30_000, keepConfig: true },
      };
      const bytes = ok(encodeWire(wire(':web', cmd(command))));
      expect(ok(decodeWire(bytes)).payload).toEqual(cmd(command));
    }
    // A force-create without a check is the Albatross [21], as before.
    const plain: Command = { type: 'unikernel-create', force: true, release: '2.7', config };
    const bytes = ok(encodeWire(wire(':web', cmd(plain))));
    expect(ok(decodeWire(bytes)).payload).toEqual(cmd(plain));
    expect(ok(decodeWire(bytes)).payload).not.toHaveProperty('command.check');
  });
});

describe('validating a check', () => {
  test('exactly one probe, a bounded deadline, well-formed URL, address and pattern', () => {
    expect(unwrap(livenessCheck({ console: '^ready$' }))).toEqual({
      probe: { kind: 'console', regex: '^ready$' },
      withinMs: 30_000,
    });
    expect(unwrap(livenessCheck({ tcp: '[::1]:8080', withinMs: 2000 })).probe).toEqual({
      kind: 'tcp',
      host: '::1',
      port: 8080,
    });
    const refused: [Parameters<typeof livenessCheck>[0], RegExp][] = [
      [{}, /exactly one .*0 given/u],
      [{ http: 'http://a/', console: 'x' }, /2 given/u],
      [{ http: 'file:///etc/passwd' }, /only http/u],
      [{ http: 'http://user:pw@a/' }, /user name or password/u],
      [{ http: `http://a/${'x'.repeat(2100)}` }, /longer than 2048/u],
      [{ tcp: 'a' }, /not HOST:PORT/u],
      [{ tcp: 'a:0' }, /port must be 1 to 65535/u],
      [{ console: '' }, /needs a pattern/u],
      [{ console: 'x'.repeat(257) }, /longer than 256/u],
      [{ console: '[' }, /Invalid regular expression/u],
      [{ console: '(a)\\1' }, /back-references/u],
      [{ console: '(a+)+' }, /repeated group/u],
      [{ console: '(?:a|b*){2,}' }, /repeated group/u],
      [{ console: '((a*))*' }, /repeated group/u],
      [{ console: 'x', withinMs: 999 }, /between 1s and 10m/u],
      [{ console: 'x', withinMs: 600_001 }, /between 1s and 10m/u],
    ];
    for (const [flags, message] of refused) {
      const checked = livenessCheck(flags);
      expect(checked.ok, JSON.stringify(flags)).toBe(false);
      if (!checked.ok) {
        expect(checked.error.code).toBe('E_REPLACE_CHECK');
        expect(checked.error.message).toMatch(message);
      }
    }
    // Quantifiers that are not nested, and groups that are not repeated, are fine.
    for (const regex of ['^(ready|up)$', '(?:a)+', 'a+b*(c)', '[(+]+', 'x\\(a+\\)+'])
      expect(livenessCheck({ console: regex }).ok, regex).toBe(true);
    expect(unwrap(parseWithin('1500ms'))).toBe(1500);
    expect(unwrap(parseWithin('2m'))).toBe(120_000);
    expect(unwrap(parseWithin('5'))).toBe(5000);
    expect(parseWithin('1h').ok).toBe(false);
  });
});

const listen = async (server: Server | ReturnType<typeof createHttp>) => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
};
const never = new AbortController().signal;
const hub = new ConsoleHub();
const vm = name(':checked') as Name & { label: Label };
const context = { hub, name: vm, startedAt: Date.now(), signal: never };

describe('the checks', () => {
  test('HTTP: 2xx and 3xx pass, a status or a refused connection is said, tried until the deadline', async () => {
    let status = 503;
    let hits = 0;
    const server = createHttp((_req, res) => {
      hits++;
      res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {});
      res.end('body');
    });
    const port = await listen(server);
    try {
      const url = `http://127.0.0.1:${port}/health`;
      const failed = await runCheck({ probe: { kind: 'http', url }, withinMs: 1000 }, context);
      expect(failed).toMatchObject({ passed: false });
      if (!failed.passed)
        expect(failed.reason).toMatch(/^no pass within 1 s \(\d+ tries\), the last: HTTP status 503$/u);
      expect(hits).toBeGreaterThan(1);
      status = 302;
      expect(await runCheck({ probe: { kind: 'http', url }, withinMs: 1000 }, context)).toEqual({
        passed: true,
        detail: `HTTP 302 from ${url}`,
      });
      // Fails first, then passes: tried again until it does.
      status = 500;
      setTimeout(() => {
        status = 200;
      }, 400);
      expect((await runCheck({ probe: { kind: 'http', url }, withinMs: 5000 }, context)).passed).toBe(true);
    } finally {
      server.close();
    }
    const closed = await runCheck(
      { probe: { kind: 'http', url: `http://127.0.0.1:${port}/` }, withinMs: 1000 },
      context,
    );
    expect(closed.passed ? '' : closed.reason).toMatch(/the last: connection refused$/u);
  });

  test('HTTP: a last try the deadline cuts short does not hide the failure before it', async () => {
    let hits = 0;
    // 503 at once, then never an answer: the second try runs into the deadline.
    const server = createHttp((_req, res) => {
      if (++hits === 1) {
        res.writeHead(503);
        res.end();
      }
    });
    const port = await listen(server);
    try {
      const url = `http://127.0.0.1:${port}/health`;
      const failed = await runCheck({ probe: { kind: 'http', url }, withinMs: 1000 }, context);
      expect(failed.passed ? '' : failed.reason).toBe(
        'no pass within 1 s (2 tries), the last: HTTP status 503',
      );
      // A check whose only try hangs says it timed out.
      const hung = await runCheck({ probe: { kind: 'http', url }, withinMs: 600 }, context);
      expect(hung.passed ? '' : hung.reason).toBe(
        'no pass within 0.6 s (1 try), the last: timed out after 0.6 s',
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  test('TCP: an accepted connection passes, a refused one is said', async () => {
    const server = createTcp((socket) => socket.destroy());
    const port = await listen(server);
    const probe = { kind: 'tcp', host: '127.0.0.1', port } as const;
    expect(await runCheck({ probe, withinMs: 1000 }, context)).toEqual({
      passed: true,
      detail: `TCP connection to 127.0.0.1:${port} accepted`,
    });
    server.close();
    await once(server, 'close');
    const refused = await runCheck({ probe, withinMs: 1000 }, context);
    expect(refused.passed ? '' : refused.reason).toMatch(/the last: connection refused$/u);
  });

  test('console: a matching line after the start passes, an older one does not; an abort ends it', async () => {
    hub.attach(vm, 1);
    hub.publish(vm, [Buffer.from('ready (the old one said it)')], Date.now() - 10_000);
    const started = Date.now();
    const ctx = { ...context, startedAt: started };
    const waiting = runCheck({ probe: { kind: 'console', regex: '^ready' }, withinMs: 5000 }, ctx);
    hub.publish(vm, [Buffer.from('booting'), Buffer.from('ready at last')], Date.now());
    expect(await waiting).toEqual({ passed: true, detail: 'console line "ready at last"' });
    const none = await runCheck({ probe: { kind: 'console', regex: '^never' }, withinMs: 1000 }, ctx);
    expect(none).toEqual({ passed: false, reason: 'no console line matching /^never/ within 1 s' });
    // It takes no subscriber slot: with room for one follower, the follower stays.
    const narrow = new ConsoleHub({ maxSubscribers: 0 });
    narrow.attach(vm, 1);
    let closed = '';
    narrow.subscribe(
      vm,
      { begin: () => true, offer: () => true, close: (why) => (closed = why) },
      { count: 0 },
    );
    const watched = runCheck(
      { probe: { kind: 'console', regex: 'up' }, withinMs: 5000 },
      { ...ctx, hub: narrow },
    );
    narrow.publish(vm, [Buffer.from('up')], Date.now());
    expect((await watched).passed).toBe(true);
    expect(closed).toBe('');
    const abort = new AbortController();
    const given = runCheck(
      { probe: { kind: 'console', regex: '^never' }, withinMs: 30_000 },
      { ...ctx, signal: abort.signal },
    );
    abort.abort();
    expect(await given).toEqual({ passed: false, reason: 'the replacement was given up' });
  });
});
