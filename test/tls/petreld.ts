// A real petreld for the TLS tests: started in-process with its TLS endpoint on 127.0.0.1, CA
// files made by `petrel ca init` and `petrel ca delegate`, and remote clients through
// src/tls/client.ts. On a host without /dev/kvm a TEST DOUBLE stands in for KVM only: the
// fake-kvm tender of test/engine/guest.ts (the real petrel-hvt with a scripted /dev/kvm) and the
// probe's kvm answer; the engine, sockets, state file and TLS endpoint are the real ones.

import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { caCommand } from '../../src/cli/commands/ca.js';
import { createRemoteTransport } from '../../src/tls/client.js';
import type { Transport } from '../../src/wire/exchange.js';
import { freshDaemon, type TestDaemon } from '../daemon/start.js';
import { createCommand } from '../engine/harness.js';
import { requestApi, type WebApi, webApiOf } from '../web/client.js';

/** `petrel ca ARGS...`, what it printed; throws with its stderr when it fails. */
export async function petrelCa(...args: string[]): Promise<string> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: (text: string | Uint8Array) => {
      stdout += Buffer.from(text).toString();
    },
    stderr: (text: string | Uint8Array) => {
      stderr += Buffer.from(text).toString();
    },
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  };
  const status = await caCommand.run(args, io);
  if (status !== 0) throw new Error(`petrel ca ${args.join(' ')}: ${stderr}`);
  return stdout;
}

export interface Petreld extends TestDaemon {
  readonly ca: string;
  /** The TLS port on 127.0.0.1; null when started without TLS. */
  readonly port: number | null;
  /** The web API's port on 127.0.0.1 (`web: true`), its certificate made by `petrel ca web-cert`. */
  readonly webPort: number | null;
  /** Every log line of the daemon (info and above), parsed. */
  readonly logs: Record<string, unknown>[];
  /** A remote client holding the delegation `label` (files ca/LABEL.pem and ca/LABEL.key). */
  remote(label: string, port?: number): Transport;
}

/**
 * A fresh PKI (`ca init`, then `ca delegate LABEL ARGS...` per entry) and a daemon using it (in
 * its directory: `ca/`, `state/`, `run/`); `flags` are petreld's configuration keys. Everything
 * is removed again if start-up fails.
 */
export async function startPetreld(
  delegations: Record<string, readonly string[]>,
  flags: Record<string, string> = {},
  options: {
    readonly tls?: boolean;
    readonly web?: boolean;
    /** A PKI to use (another petreld's `ca`), not a new one; `delegations` are then not made. */
    readonly ca?: string;
  } = {},
): Promise<Petreld> {
  let ca = '';
  const logs: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const node = await freshDaemon(
    'petreld-tls-',
    async (dir) => {
      ca = options.ca ?? path.join(dir, 'ca');
      if (options.ca === undefined) {
        await mkdir(ca);
        await petrelCa('init', '--dir', ca);
        for (const [label, args] of Object.entries(delegations)) {
          await petrelCa('delegate', label, ...args, '--dir', ca);
        }
      }
      const tls =
        options.tls === false
          ? {}
          : {
              tlsListen: '127.0.0.1:0',
              tlsCa: path.join(ca, 'cacert.pem'),
              tlsCert: path.join(ca, 'server.pem'),
              tlsKey: path.join(ca, 'server.key'),
            };
      if (options.web === true && !existsSync(path.join(ca, 'web.pem')))
        await petrelCa('web-cert', '127.0.0.1', 'localhost', '--dir', ca);
      const web =
        options.web === true
          ? {
              webListen: '127.0.0.1:0',
              tlsCa: path.join(ca, 'cacert.pem'),
              webCert: path.join(ca, 'web.pem'),
              webKey: path.join(ca, 'web.key'),
            }
          : {};
      return { runtimes: 'hvt', canaryDeadline: '5s', ...tls, ...web, ...flags };
    },
    log,
  );
  const port = node.report.tls?.port ?? null;
  return {
    ...node,
    ca,
    port,
    webPort: node.report.web?.port ?? null,
    logs,
    remote: (label, at = port ?? 0) =>
      createRemoteTransport({
        host: '127.0.0.1',
        port: at,
        ca: path.join(ca, 'cacert.pem'),
        cert: path.join(ca, `${label}.pem`),
        key: path.join(ca, `${label}.key`),
      }),
  };
}

/** The flags of `petrel --remote` that reach a Petreld over TLS as the delegation `label`. */
export function remoteFlags(petreld: Petreld, label: string): string[] {
  return [
    ...['--remote', `127.0.0.1:${petreld.port}`, '--ca', path.join(petreld.ca, 'cacert.pem')],
    ...['--cert', path.join(petreld.ca, `${label}.pem`), '--key', path.join(petreld.ca, `${label}.key`)],
  ];
}

/** A token of the delegation `label` of a Petreld's PKI (`petrel ca token`), its text. */
export async function mintToken(petreld: Petreld, label: string, name: string): Promise<string> {
  const cert = path.join(petreld.ca, `${label}.pem`);
  const key = path.join(petreld.ca, `${label}.key`);
  return (await petrelCa('token', '--cert', cert, '--key', key, '--name', name)).trim();
}

export interface WebReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** One HTTPS request to a Petreld's web API (`web: true`): requestApi's arguments after the API. */
export async function webRequest(
  petreld: Petreld,
  ...request: Parameters<typeof requestApi> extends [WebApi, ...infer Rest] ? Rest : never
): Promise<WebReply> {
  return requestApi(await webApiOf(petreld), ...request);
}

/** Waits until `check` resolves true, polling every 100 ms; throws naming `what` after `ms`. */
export async function eventually(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Creates the canary `vm` (its arguments `args`) by mutual TLS as the delegation `label`. */
export async function createCanary(
  petreld: Petreld,
  label: string,
  vm: string,
  args: readonly string[],
  /** Another canary image (the spt one); its memory is 4 MiB, the hvt canary's 16. */
  image?: string,
): Promise<void> {
  const { canaryImage } = await import('../engine/guest.js');
  const { canaryConfig } = await import('../engine/harness.js');
  const { name } = await import('./helpers.js');
  const answer = await petreld
    .remote(label)
    .request(
      name(vm),
      createCommand(
        await canaryConfig(image ?? canaryImage, [...args], { memory: image === undefined ? 16 : 4 }),
      ),
    );
  if (!answer.ok || answer.value.kind !== 'reply') throw new Error(`create ${vm}: ${JSON.stringify(answer)}`);
}

/**
 * The console history of `vm` as `petrel console --no-follow` reads it over TLS: subscribe to the
 * last `count` lines, finish our end, read to the end; anything but a console line fails.
 */
export async function consoleHistory(client: Transport, vm: string, count: number): Promise<string[]> {
  const { subscribeCommand } = await import('../daemon/client.js');
  const { name } = await import('./helpers.js');
  const subscribed = await client.stream(name(vm), subscribeCommand({ kind: 'count', count }));
  if (!subscribed.ok) throw new Error(subscribed.error.message);
  subscribed.value.finish();
  const lines: string[] = [];
  for await (const event of subscribed.value.events) {
    if (event.kind !== 'data' || event.data.type !== 'console') throw new Error(`unexpected ${event.kind}`);
    lines.push(Buffer.from(event.data.line).toString());
  }
  return lines;
}
