// Properties of console continuity (Petrel (k)): whatever the holder's chunking and whatever it
// had to drop, the held console reader delivers original lines in order, and between two
// delivered lines a marker counts exactly the bytes of the lines that were lost there. And the
// start-up plan over held tenders places each tender once and adopts at most one per name.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { heldConsoleReader } from '../src/console/reader.js';
import { configFingerprint, encodeMeta, type HeldTender, planAdoption } from '../src/engine/adopt.js';
import { unwrap } from '../src/resources/errors.js';
import { type Name, parseName } from '../src/resources/name.js';
import { solo5Config } from '../src/wire/shapes.js';
import type { MacAddress } from '../src/wire/types.js';

const lineArb = fc.string({ unit: fc.constantFrom('a', 'b', 'c', ' ', '7'), minLength: 1, maxLength: 40 });

describe('held console reader', () => {
  it('delivers original lines in order, with markers that count exactly the lost lines', () => {
    fc.assert(
      fc.property(
        fc.array(lineArb, { minLength: 1, maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.array(fc.boolean(), { maxLength: 80 }),
        (texts, cutSeeds, lostSeeds) => {
          // Numbered, so that each delivered line names the original it is.
          const lines = texts.map((l, i) => `${i}:${l}`);
          const text = Buffer.from(lines.map((l) => `${l}\n`).join(''));
          const cuts = [...new Set(cutSeeds.map((c) => c % text.length))].sort((a, b) => a - b);
          const bounds = [0, ...cuts.filter((c) => c > 0), text.length];
          const got: string[] = [];
          const reader = heldConsoleReader((batch) => {
            for (const line of batch) got.push(line.toString());
          });
          let listener: (c: { offset: number; time: number; bytes: Buffer }) => void = () => undefined;
          reader.bind({
            onConsole: (l) => {
              listener = l;
            },
            pause: () => undefined,
            resume: () => undefined,
            ack: () => undefined,
            exit: new Promise(() => undefined),
          });
          for (let i = 0; i + 1 < bounds.length; i++) {
            const [from, to] = [bounds[i] as number, bounds[i + 1] as number];
            // The holder overwrote this piece before anyone read it: the offsets jump over it.
            if (lostSeeds[i] === true) continue;
            listener({ offset: from, time: 0, bytes: text.subarray(from, to) });
          }
          // Walk the original lines beside what was delivered.
          let at = 0;
          let lost = 0;
          for (const line of got) {
            const marker = /^\[petrel: (\d+) bytes of console output dropped\]$/u.exec(line);
            if (marker !== null) {
              expect(lost).toBe(0);
              lost = Number(marker[1]);
              continue;
            }
            let skipped = 0;
            while (at < lines.length && lines[at] !== line) skipped += (lines[at++] as string).length + 1;
            expect(at, `line ${JSON.stringify(line)} is not an original one, in order`).toBeLessThan(
              lines.length,
            );
            expect(skipped).toBe(lost);
            lost = 0;
            at++;
          }
          // A marker only ever stands before the line that follows the loss.
          expect(lost).toBe(0);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

// As the state keeps them: the configuration without its image, the image by digest.
const { image: _image, ...config } = solo5Config(Buffer.from('image'), { memory: 4, arguments: ['x'] });
const other = { ...config, arguments: ['y'] };
const image = { digest: '0'.repeat(64), size: 5 };
const names = [':a', ':b', ':c'];
const name = (text: string) => unwrap(parseName(text)) as Name;

const heldArb = fc.record({
  tag: fc.constantFrom(...names, ':z', 'not a name'),
  committedConfig: fc.boolean(),
  running: fc.boolean(),
  record: fc.constantFrom('this' as const, 'none' as const, 'other' as const),
  exitedAt: fc.nat({ max: 1000 }),
});

describe('adoption plan', () => {
  it('places each held tender once; at most one adopted or exited per name, never both', () => {
    fc.assert(
      fc.property(fc.subarray(names), fc.array(heldArb, { maxLength: 12 }), (stored, specs) => {
        const held: HeldTender[] = specs.map((s, i) => ({
          pid: 100 + i,
          tag: s.tag,
          meta: encodeMeta({
            fingerprint: configFingerprint(s.committedConfig ? config : other, image.digest),
            digest: '00',
            image: '/i',
            fifo: '/f',
            nets: [{ netif: 'n', bridge: 'b', tap: 't', mac: '02:00:00:00:00:01' as MacAddress }],
          }),
          exit: s.running ? null : { code: 0, signal: null },
          startedAt: new Date(0),
          exitedAt: s.running ? null : new Date(s.exitedAt),
          record: s.record,
        }));
        const plan = planAdoption(
          stored.map((n) => ({ name: name(n), config, image })),
          held,
        );
        const placed = [
          ...plan.adopt.map((a) => a.held),
          ...plan.exited.map((e) => e.held),
          ...plan.dismiss.map((d) => d.held),
        ];
        expect(placed.map((h) => h.pid).sort()).toEqual(held.map((h) => h.pid).sort());
        const adopted = plan.adopt.map((a) => a.held.tag);
        const exited = plan.exited.map((e) => e.held.tag);
        expect(new Set(adopted).size).toBe(adopted.length);
        expect(new Set(exited).size).toBe(exited.length);
        expect(adopted.filter((t) => exited.includes(t))).toEqual([]);
        for (const a of plan.adopt) {
          expect(stored).toContain(a.held.tag);
          expect(a.held.exit).toBeNull();
          expect(a.held.record).not.toBe('other');
          expect(a.meta.fingerprint).toBe(configFingerprint(config, image.digest));
        }
        for (const e of plan.exited) {
          expect(stored).toContain(e.held.tag);
          expect(e.held.exit).not.toBeNull();
        }
      }),
      { numRuns: 1000 },
    );
  });
});
