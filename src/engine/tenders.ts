// The tender side of the engine's host (src/engine/host.ts): the connection to the run
// directory's holder, tenders spawned under it with their consoles bound, and at start-up the
// survey of the tenders an earlier petreld left there, their adoption or their dismissal.

import { existsSync } from 'node:fs';
import {
  type ConsoleReader,
  type HeldConsoleReader,
  heldConsoleReader,
  type LineSink,
} from '../console/reader.js';
import { type HeldChildInfo, Holder } from '../host/holder.js';
import { holderDir } from '../host/paths.js';
import { checkPidRecord, type PidRecord, readPidRecords, writePidRecord } from '../host/pidrecord.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, parseName, printName } from '../resources/name.js';
import { adoptTender, spawnTender, type TenderProcess } from '../tender/process.js';
import { decodeMeta, type HeldTender } from './adopt.js';
import type { HostResult } from './types.js';

export interface TenderHost {
  /** The console of the tender about to be spawned on `fifo` (the holder reads the FIFO). */
  openConsole(fifo: string, sink: LineSink): HostResult<ConsoleReader>;
  /** Starts a tender under the holder; `meta` is kept there for a later petreld. */
  /** With `jailed`, argv[0] is petrel-jail: it enters the test network namespace itself. */
  spawnTender(
    argv: readonly string[],
    fifo: string,
    name: Name,
    meta: string,
    jailed?: boolean,
  ): HostResult<TenderProcess>;
  /**
   * The tenders the holder keeps from an earlier petreld, running or exited, each with whether
   * its name's PID record names it. Fails when another petreld is attached to the holder.
   */
  heldTenders(): HostResult<HeldTender[]>;
  /**
   * Takes over a held tender: its exit, its record, its console (from the holder's oldest byte)
   * into `sink`. `problems` names files it runs without (logged; the guest is kept).
   */
  adoptTender(
    held: HeldTender,
    sink: LineSink,
  ): HostResult<{ tender: TenderProcess; reader: ConsoleReader; problems: string[] }>;
  /** Stops a held tender nothing committed refers to (SIGTERM, grace, SIGKILL), or forgets an exited one. */
  dismissTender(held: HeldTender): HostResult<string>;
  /** The pid of the run directory's holder (started when none runs): jail ids are claimed for it. */
  holderPid(): HostResult<number>;
  /** Lets go of the holder (petreld stops); whatever it still holds keeps running under it. */
  close(): void;
}

export interface TenderHostOptions {
  readonly runDir: string;
  /** Network namespace for tenders (tests): `ip netns exec` execs them, so the pid is theirs. */
  readonly netns?: string;
  /** Grace between SIGTERM and SIGKILL when a held tender is dismissed (ms). */
  readonly stopTimeoutMs: number;
  /** Bytes of console each tender's holder keeps while no petreld is attached. Default 64 KiB. */
  readonly consoleBufferBytes?: number;
}

export function createTenderHost(options: TenderHostOptions): TenderHost {
  /** Consoles opened for tenders not spawned yet, by FIFO path. */
  const consoles = new Map<string, HeldConsoleReader>();
  /** What the last survey found, by pid: the holder's view and the PID record of its name. */
  const surveyed = new Map<number, { info: HeldChildInfo; record: PidRecord | null }>();
  let holder: Holder | null = null;

  /** The holder of the run directory, connected (and started) when first needed or after it died. */
  const held = async (): Promise<Result<Holder, PetrelError>> => {
    if (holder?.connected) return ok(holder);
    const connected = await Holder.connect(holderDir(options.runDir));
    if (!connected.ok) return connected;
    holder = connected.value;
    return connected;
  };

  return {
    async openConsole(fifo, sink) {
      const reader = heldConsoleReader(sink);
      consoles.set(fifo, reader);
      return ok(reader);
    },

    async spawnTender(argv, fifo, name, meta, jailed) {
      const reader = consoles.get(fifo);
      consoles.delete(fifo);
      const connected = await held();
      if (!connected.ok) return connected;
      // `ip netns exec` would hide the host's /sys (so its cgroups) from petrel-jail.
      const full =
        options.netns === undefined
          ? argv
          : jailed === true
            ? [argv[0] as string, '--netns', `/run/netns/${options.netns}`, ...argv.slice(1)]
            : ['ip', 'netns', 'exec', options.netns, ...argv];
      const spawned = await spawnTender({
        holder: connected.value,
        argv: full,
        console: {
          fifo,
          ...(options.consoleBufferBytes === undefined ? {} : { bufferBytes: options.consoleBufferBytes }),
        },
        record: { runDir: options.runDir, name },
        tag: printName(name),
        meta,
      });
      if (spawned.ok && reader !== undefined && spawned.value.console !== null)
        reader.bind(spawned.value.console);
      return spawned;
    },

    async holderPid() {
      const connected = await held();
      return connected.ok ? ok(connected.value.pid) : connected;
    },

    async heldTenders() {
      const connected = await held();
      if (!connected.ok) return connected;
      const listed = await connected.value.list();
      if (!listed.ok) return listed;
      const records = readPidRecords(options.runDir);
      if (!records.ok) return records;
      const byName = new Map(records.value.records.map((r) => [printName(r.name), r]));
      surveyed.clear();
      const found: HeldTender[] = [];
      for (const info of listed.value) {
        const record = byName.get(info.tag) ?? null;
        const liveness = record === null ? null : checkPidRecord(record);
        const alive = liveness?.ok === true && liveness.value === 'alive';
        const says = !alive ? 'none' : record?.pid === info.pid ? 'this' : 'other';
        surveyed.set(info.pid, { info, record: says === 'this' ? record : null });
        found.push({
          pid: info.pid,
          tag: info.tag,
          meta: info.meta,
          exit: info.exit,
          startedAt: info.startedAt,
          exitedAt: info.exitedAt,
          record: says,
        });
      }
      return ok(found);
    },

    async adoptTender(tender, sink) {
      const entry = surveyed.get(tender.pid);
      if (entry === undefined || holder === null)
        return err('E_ADOPT', `tender ${tender.pid} was not surveyed`);
      const problems: string[] = [];
      let record = entry.record;
      const name = parseName(tender.tag);
      if (record === null && name.ok) {
        // The holder vouches for the process: only its record was lost. Written again.
        const written = writePidRecord(options.runDir, name.value, tender.pid);
        if (written.ok) record = written.value.value;
        problems.push(written.ok ? 'its PID record was missing (written again)' : written.error.message);
      }
      const adopted = await adoptTender(holder, entry.info, record);
      if (adopted === null || adopted.tender.console === null)
        return err('E_ADOPT', `the holder no longer has tender ${tender.pid}`);
      const reader = heldConsoleReader(sink);
      reader.bind(adopted.tender.console, adopted.console);
      const meta = decodeMeta(tender.meta);
      const files = meta === null ? [] : [meta.image, meta.fifo];
      problems.push(...files.filter((file) => !existsSync(file)).map((file) => `${file} is missing`));
      return ok({ tender: adopted.tender, reader, problems });
    },

    async dismissTender(tender) {
      const connected = await held();
      if (!connected.ok) return connected;
      const watched = await connected.value.watch(tender.pid);
      surveyed.delete(tender.pid);
      if (watched === null) return ok(`tender ${tender.pid} (${tender.tag}) was already gone`);
      watched.child.onConsole(() => undefined);
      let what = `forgot the exit of tender ${tender.pid} (${tender.tag})`;
      if (tender.exit === null) {
        watched.child.kill('SIGTERM');
        const timer = setTimeout(() => watched.child.kill('SIGKILL'), options.stopTimeoutMs);
        const exit = await watched.child.exit;
        clearTimeout(timer);
        what = `stopped tender ${tender.pid} (${tender.tag}), ${exit.code === null ? `signal ${exit.signal}` : `exit ${exit.code}`}`;
      }
      watched.child.forget();
      return ok(what);
    },

    close() {
      holder?.close();
      holder = null;
    },
  };
}
