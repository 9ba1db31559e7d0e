// What the web API tests share: tokens made by `petrel ca token` for a delegation of a test
// petreld's PKI, one HTTPS request whose JSON response is checked against docs/openapi.json,
// and waiting for a condition that may be asynchronous.

import { request } from 'node:https';
import path from 'node:path';
import { caCommand } from '../../src/cli/commands/ca.js';
import { checkResponse } from './openapi.js';

/** `petrel ca token` for ca/LABEL.pem, named `name`: the token's text. */
export async function mintToken(caDir: string, label: string, name: string): Promise<string> {
  let out = '';
  let errors = '';
  const status = await caCommand.run(
    [
      'token',
      '--cert',
      path.join(caDir, `${label}.pem`),
      '--key',
      path.join(caDir, `${label}.key`),
      '--name',
      name,
    ],
    {
      stdout: (t) => {
        out += String(t);
      },
      stderr: (t) => {
        errors += String(t);
      },
      readFile: async () => new Uint8Array(),
      writeFile: async () => {},
    },
  );
  if (status !== 0) throw new Error(`petrel ca token: ${errors}`);
  return out.trim();
}

export interface ApiReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly json: unknown;
}

export interface ApiCall {
  readonly port: number;
  readonly ca: Buffer;
  readonly token: string;
  readonly method: string;
  readonly url: string;
  /** The document's path template to check the response against; null: none (an unknown path). */
  readonly template: string | null;
  readonly headers?: Record<string, string>;
  /** Written in the pieces given, each after the last has gone. */
  readonly body?: readonly Buffer[];
}

/** One HTTPS request; its JSON response checked against the document. */
export function callApi(call: ApiCall): Promise<ApiReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: call.port,
        method: call.method,
        path: call.url,
        headers: { authorization: `Bearer ${call.token}`, ...call.headers },
        ca: call.ca,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            checkResponse(call.method, call.template, res.statusCode as number, json);
            resolve({ status: res.statusCode as number, headers: res.headers, json });
          } catch (e) {
            reject(e);
          }
        });
      },
    );
    req.on('error', (e) => reject(new Error(`${call.method} ${call.url}: ${e.message}`)));
    const pieces = [...(call.body ?? [])];
    const write = (): void => {
      const piece = pieces.shift();
      if (piece === undefined) req.end();
      else req.write(piece, write);
    };
    write();
  });
}

/** Waits until `check` holds (it may be async), failing with `what` after `ms`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
