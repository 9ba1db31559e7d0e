// What the web API tests share (tokens: test/tls/petreld.ts mintToken): one HTTPS request whose JSON response is checked against docs/openapi.json,
// and waiting for a condition that may be asynchronous.

import { request } from 'node:https';
import { checkResponse } from './openapi.js';

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
