// Wire codec throughput: decode and encode of a small command, an info reply listing 1,000
// unikernels, and a create carrying a 10 MiB image; plus the frame reader on that create.
//
// Node 20 cannot run TypeScript itself; vite (a dev dependency) can, so run from the repo root:
//   node --input-type=module -e "await (await import('vite')).runnerImport('./bench/wire.ts')"
// BENCH_SECONDS (default 1) sets the time spent per case. Rates are per CPU-second of the process.

import { parseName } from '../src/resources/name.js';
import { FrameReader, frame, infoReply } from '../src/wire/index.js';
import { decodeWire, encodeWire } from '../src/wire/message.js';
import { solo5Config } from '../src/wire/shapes.js';
import type { UnikernelInfo, Wire } from '../src/wire/types.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1);

function name(text: string) {
  const parsed = parseName(text);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
}

function bytesOf(wire: Wire): Uint8Array {
  const encoded = encodeWire(wire);
  if (!encoded.ok) throw new Error(encoded.error.message);
  return encoded.value;
}

interface Row {
  readonly case: string;
  readonly 'ops/s': string;
  readonly 'MB/s': string;
  readonly 'ops/s (wall)': string;
  readonly 'bytes/op': number;
}

const rows: Row[] = [];

const rate = (perSecond: number) => Math.round(perSecond).toLocaleString('en-US');

/**
 * Runs `op` repeatedly for about SECONDS (after a warm-up). Rates are per second of this process's
 * CPU time (user + system, GC threads included), which stays meaningful on a shared, loaded
 * machine; the wall-clock rate is shown beside it.
 */
function measure(label: string, bytesPerOp: number, op: () => unknown): void {
  const warmUntil = performance.now() + 200 * SECONDS;
  while (performance.now() < warmUntil) op();
  let ops = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < 1000 * SECONDS) {
    for (let i = 0; i < 4; i++) op();
    ops += 4;
    elapsed = performance.now() - start;
  }
  const used = process.cpuUsage(cpu);
  const perCpuSecond = (ops * 1e6) / (used.user + used.system);
  rows.push({
    case: label,
    'ops/s': rate(perCpuSecond),
    'MB/s': ((perCpuSecond * bytesPerOp) / 2 ** 20).toFixed(1),
    'ops/s (wall)': rate((ops * 1000) / elapsed),
    'bytes/op': bytesPerOp,
  });
}

function must<T>(result: { ok: true; value: T } | { ok: false; error: { message: string } }): T {
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

// 1. A small command: unikernel info [19] on `user:web`.
const small: Wire = {
  header: { version: 5, sequence: 0n, name: name('user:web') },
  payload: { kind: 'command', command: { type: 'unikernel-info', release: '2.7' } },
};
const smallBytes = bytesOf(small);
measure('small command decode', smallBytes.length, () => must(decodeWire(smallBytes)));
measure('small command encode', smallBytes.length, () => must(encodeWire(small)));

// 2. An info reply listing 1,000 unikernels (2.7 shape, one network and two arguments each).
const info: UnikernelInfo = {
  typ: 'solo5',
  startup: null,
  failBehaviour: { kind: 'restart', exitCodes: [1, 2] },
  cpuids: [0, 1],
  memory: 64,
  digest: new Uint8Array(32).fill(0xaa),
  blocks: [],
  bridges: [{ netif: 'service', bridge: 'br0', mac: '00:80:41:01:02:03' as never }],
  arguments: ['--ipv4=10.0.0.2/24', '-l'],
  started: new Date('2024-01-02T03:04:05.250Z'),
  cpus: 1,
  linuxBootPartition: null,
};
const entries = Array.from({ length: 1000 }, (_, i) => ({ name: name(`user:vm${i}`), info }));
const bigInfo: Wire = {
  header: { version: 5, sequence: 0n, name: name('user:') },
  payload: { kind: 'reply', reply: infoReply('2.7', entries) },
};
const bigInfoBytes = bytesOf(bigInfo);
measure('info reply, 1,000 unikernels, decode', bigInfoBytes.length, () => must(decodeWire(bigInfoBytes)));
measure('info reply, 1,000 unikernels, encode', bigInfoBytes.length, () => must(encodeWire(bigInfo)));

// 3. A create [20] carrying a 10 MiB image.
const image = new Uint8Array(10 * 2 ** 20).map((_, i) => (i * 31) & 0xff);
const create: Wire = {
  header: { version: 5, sequence: 0n, name: name('user:big') },
  payload: {
    kind: 'command',
    command: {
      type: 'unikernel-create',
      force: false,
      release: '2.7',
      config: solo5Config(image, {
        memory: 512,
        bridges: [{ netif: 'service', bridge: null, mac: null }],
        arguments: ['--hello'],
      }),
    },
  },
};
const createBytes = bytesOf(create);
measure('create, 10 MiB image, decode', createBytes.length, () => must(decodeWire(createBytes)));
measure('create, 10 MiB image, encode', createBytes.length, () => must(encodeWire(create)));

// 4. The same create as it arrives from a socket: 64 KiB chunks through the frame reader, then decoded.
const framed = frame(createBytes);
const chunks = Array.from({ length: Math.ceil(framed.length / 65536) }, (_, i) =>
  framed.subarray(i * 65536, (i + 1) * 65536),
);
measure('create, 10 MiB, 64 KiB chunks → frame → decode', framed.length, () => {
  const reader = new FrameReader();
  for (const chunk of chunks) {
    for (const event of must(reader.push(chunk))) if (event.kind === 'frame') must(decodeWire(event.payload));
  }
});

console.table(rows);
