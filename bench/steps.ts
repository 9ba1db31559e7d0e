// Where a create+destroy pair spends its time: the median time between consecutive steps of
// the transaction, as the engine publishes them on its diagnostics channel, for the spt canary
// without a network and with one tap on a bridge (in the harness' network namespace). A profile
// to read beside bench/lifecycle.ts when its figures move.
// Run: npm run bench -- steps

import diagnostics from 'node:diagnostics_channel';
import { TRANSACTION_CHANNEL, type TransactionEvent } from '../src/engine/events.js';
import { sptCanary, sptCanaryNet } from '../test/engine/guest.js';
import { canaryConfig, createCommand, makeEngine, name } from '../test/engine/harness.js';

const WARM_UP = 20;
const PAIRS = 200;

const t = await makeEngine({ stopTimeoutMs: 2_000 });
let marks: [string, number][] = [];
diagnostics.subscribe(TRANSACTION_CHANNEL, (message) => {
  marks.push([(message as TransactionEvent).step, performance.now()]);
});
try {
  const variants = [
    { label: 'no network', config: await canaryConfig(sptCanary, ['wait', 'w']), pairs: PAIRS },
    {
      label: 'one tap on a bridge',
      config: await canaryConfig(sptCanaryNet, ['wait', 'w'], {
        bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
      }),
      pairs: PAIRS / 4,
    },
  ];
  for (const { label, config, pairs } of variants) {
    const gaps = new Map<string, number[]>();
    let started = performance.now();
    for (let i = 0; i < WARM_UP + pairs; i++) {
      if (i === WARM_UP) {
        gaps.clear();
        started = performance.now();
      }
      const vm = name(`:steps${i}`);
      marks = [['create sent', performance.now()]];
      await t.engine.execute({ name: vm, command: createCommand(config) });
      marks.push(['create answered', performance.now()]);
      await t.engine.execute({ name: vm, command: { type: 'unikernel-destroy' } });
      marks.push(['destroy answered', performance.now()]);
      // A step's gap is the time since the step before it; create's and destroy's state writes
      // are told apart by their position.
      let seenWrite = false;
      for (let k = 1; k < marks.length; k++) {
        const [step, at] = marks[k] as [string, number];
        const key =
          step === 'state-written'
            ? seenWrite
              ? 'state-written (destroy)'
              : 'state-written (create)'
            : step;
        if (step === 'state-written') seenWrite = true;
        gaps.set(key, [...(gaps.get(key) ?? []), at - (marks[k - 1] as [string, number])[1]]);
      }
    }
    const perPair = (performance.now() - started) / pairs;
    console.log(`create+destroy of the spt canary, ${label}, ${pairs} pairs: median ms between steps`);
    for (const [key, values] of gaps) {
      values.sort((a, b) => a - b);
      console.log(`  ${key.padEnd(26)} ${(values[values.length >> 1] as number).toFixed(2)}`);
    }
    console.log(
      `  mean per pair              ${perPair.toFixed(2)} (${(1000 / perPair).toFixed(1)} pairs/s)`,
    );
  }
} finally {
  await t.close();
}
