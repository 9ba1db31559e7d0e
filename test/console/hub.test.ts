import { describe, expect, it } from 'vitest';
import { ConsoleHub, type Subscriber, type SubscribeStatus } from '../../src/console/hub.js';
import type { ConsoleLine } from '../../src/console/ring.js';
import { type Label, type Name, printName } from '../../src/resources/name.js';
import { name as parse } from '../resources/helpers.js';

const vmName = (text: string) => parse(text) as Name & { label: Label };

/** A subscriber with a queue of `capacity` messages that nobody drains unless told to. */
class Recorder implements Subscriber {
  status: SubscribeStatus | null = null;
  received: string[] = [];
  closed: string | null = null;
  constructor(readonly capacity = 100) {}
  begin(status: SubscribeStatus, history: readonly ConsoleLine[]) {
    this.status = status;
    for (const entry of history) if (!this.#take(entry)) return false;
    return true;
  }
  offer(_name: Name, entry: ConsoleLine) {
    return this.#take(entry);
  }
  close(reason: string) {
    this.closed = reason;
  }
  #take(entry: ConsoleLine) {
    if (this.received.length >= this.capacity) return false;
    this.received.push(Buffer.from(entry.line).toString());
    return true;
  }
}

const say = (hub: ConsoleHub, name: string, ...lines: string[]) =>
  hub.publish(
    vmName(name),
    lines.map((l) => Buffer.from(l)),
    Date.now(),
  );

describe('console hub', () => {
  it('subscribing before the VM exists waits, then receives its live lines', () => {
    const hub = new ConsoleHub();
    const early = new Recorder();
    expect(hub.subscribe(vmName('user:web'), early, { count: 10 })).toBe('waiting for VM');
    hub.attach(vmName('user:web'), 5);
    say(hub, 'user:web', 'boot');
    expect(early.received).toEqual(['boot']);
  });

  it('history then live lines; history and subscriptions survive a restart of the same name', () => {
    const hub = new ConsoleHub();
    hub.attach(vmName(':hello'), 5);
    say(hub, ':hello', 'first vm 1', 'first vm 2');
    const sub = new Recorder();
    expect(hub.subscribe(vmName(':hello'), sub, { count: 1 })).toBe('subscribed');
    expect(sub.received).toEqual(['first vm 2']);
    hub.detach(vmName(':hello'));
    expect(hub.listInactive([]).map(printName)).toEqual([':hello']);
    hub.attach(vmName(':hello'), 5);
    say(hub, ':hello', 'second vm');
    expect(sub.received).toEqual(['first vm 2', 'second vm']);
    const late = new Recorder();
    hub.subscribe(vmName(':hello'), late, { count: 10 });
    expect(late.received).toEqual(['first vm 1', 'first vm 2', 'second vm']);
  });

  it('closes a subscriber whose queue is full; the others get every line', () => {
    const hub = new ConsoleHub();
    hub.attach(vmName(':flood'), 5);
    const fast = new Recorder(1000);
    const slow = new Recorder(3);
    hub.subscribe(vmName(':flood'), fast, { count: 0 });
    hub.subscribe(vmName(':flood'), slow, { count: 0 });
    for (let i = 0; i < 10; i++) say(hub, ':flood', `l${i}`);
    expect(fast.received).toHaveLength(10);
    expect(slow.closed).toBe('queue full');
    expect(slow.received).toEqual(['l0', 'l1', 'l2']);
  });

  it('keeps at most max+1 subscribers per name, closing the oldest', () => {
    const hub = new ConsoleHub({ maxSubscribers: 2 });
    const subs = [new Recorder(), new Recorder(), new Recorder(), new Recorder()];
    for (const sub of subs) hub.subscribe(vmName(':x'), sub, { count: 0 });
    expect(subs.map((s) => s.closed)).toEqual(['too many subscribers', null, null, null]);
  });

  it('keeps at most n+1 rings per path, dropping the smallest inactive label', () => {
    const hub = new ConsoleHub();
    for (const label of ['b', 'a']) {
      hub.attach(vmName(`p:${label}`), 2);
      hub.detach(vmName(`p:${label}`));
    }
    const watcher = new Recorder();
    hub.subscribe(vmName('p:a'), watcher, { count: 0 });
    hub.attach(vmName('p:c'), 2);
    expect(hub.listInactive(parse('p:').path).map(printName)).toEqual([':b']);
    expect(watcher.closed).toBe('console ring dropped');
  });

  it('lists inactive names relative to the path, in listing order', () => {
    const hub = new ConsoleHub();
    for (const n of ['a:x', 'b:y', 'a:z', 'a:q:r', 'c:running']) hub.attach(vmName(n), 9);
    for (const n of ['a:x', 'b:y', 'a:z', 'a:q:r']) hub.detach(vmName(n));
    expect(hub.listInactive([]).map(printName)).toEqual(['b:y', 'a:z', 'a:x', 'a:q:r']);
    expect(hub.listInactive(parse('a:').path).map(printName)).toEqual([':z', ':x', 'q:r']);
  });
});
