// What the web API tests share: HTTPS requests to a petreld's web API (test/tls/petreld.ts,
// `web: true`) with its certificate verified for 127.0.0.1, a client holding a token whose JSON
// responses are checked against docs/openapi.json, browser sessions, and waiting for a
// condition that may be asynchronous.

import { readFile } from 'node:fs/promises';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { request } from 'node:https';
import path from 'node:path';
import { type Petreld, type WebReply, webRequest } from '../tls/petreld.js';
import { checkResponse } from './openapi.js';

export interface ApiReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly json: unknown;
}

/** Where a web API listens and the CA that signed its certificate. */
export interface WebApi {
  readonly port: number;
  readonly ca: Buffer;
}

/** A Petreld's web API (`web: true`), its certificate verified for 127.0.0.1. */
export async function webApiOf(petreld: Petreld): Promise<WebApi> {
  return { port: petreld.webPort as number, ca: await readFile(path.join(petreld.ca, 'cacert.pem')) };
}

/**
 * An HTTPS request to the API, not yet ended: for what `callApi` does not do (event streams,
 * raw bytes, bodies cut short). `token` null: no authorization header.
 */
export function openApi(
  api: WebApi,
  token: string | null,
  method: string,
  url: string,
  headers: Record<string, string> = {},
  localAddress?: string,
): ClientRequest {
  const authorization: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return request({
    host: '127.0.0.1',
    port: api.port,
    method,
    path: url,
    headers: { ...authorization, ...headers },
    ca: api.ca,
    agent: false,
    ...(localAddress === undefined ? {} : { localAddress }),
  });
}

/** A response's whole body. */
export function bodyOf(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
  });
}

/** One HTTPS request to the API with `headers` as given (no token added), its body as text. */
export function requestApi(
  api: WebApi,
  method: string,
  url: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
  localAddress?: string,
): Promise<WebReply> {
  const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = openApi(api, null, method, url, { ...headers, ...length }, localAddress);
    req.on('response', (res: IncomingMessage) =>
      bodyOf(res).then(
        (all) =>
          resolve({ status: res.statusCode as number, headers: res.headers, text: all.toString('utf8') }),
        reject,
      ),
    );
    req.on('error', (e) => reject(new Error(`${method} ${url}: ${e.message}`)));
    req.end(body);
  });
}

/** A GET's status, headers and raw body (an image, a block device's bytes). */
export function getBytes(
  api: WebApi,
  token: string,
  url: string,
): Promise<{ status: number; headers: IncomingMessage['headers']; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = openApi(api, token, 'GET', url);
    req.on('response', (res: IncomingMessage) =>
      bodyOf(res).then(
        (bytes) => resolve({ status: res.statusCode as number, headers: res.headers, bytes }),
        reject,
      ),
    );
    req.on('error', reject);
    req.end();
  });
}

export interface ApiCall extends WebApi {
  /** null: no authorization header. */
  readonly token: string | null;
  readonly method: string;
  readonly url: string;
  /** The document's path template to check the response against; null: none (an unknown path). */
  readonly template: string | null;
  readonly headers?: Record<string, string>;
  /** Written in the pieces given, each after the last has gone. */
  readonly body?: readonly Buffer[];
  readonly localAddress?: string;
}

/** One HTTPS request; its JSON response checked against the document. */
export function callApi(call: ApiCall): Promise<ApiReply> {
  return new Promise((resolve, reject) => {
    const req = openApi(call, call.token, call.method, call.url, call.headers, call.localAddress);
    req.on('response', (res: IncomingMessage) => {
      bodyOf(res).then((body) => {
        try {
          const json = JSON.parse(body.toString('utf8'));
          checkResponse(call.method, call.template, res.statusCode as number, json);
          resolve({ status: res.statusCode as number, headers: res.headers, json });
        } catch (e) {
          reject(e);
        }
      }, reject);
    });
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

/** A body's headers: a string is JSON, bytes are an octet stream. */
export function bodyHeaders(body: string | Buffer | undefined): Record<string, string> {
  if (body === undefined) return {};
  const type = typeof body === 'string' ? 'application/json' : 'application/octet-stream';
  return { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) };
}

/** A client of a petreld's web API holding one token. */
export interface WebClient extends WebApi {
  readonly token: string;
  /**
   * One request as this token (`as`: another one, null: none), its JSON response checked against
   * the document for `template`; a string body is sent as JSON, bytes as an octet stream.
   */
  call(
    method: string,
    url: string,
    template: string | null,
    body?: string | Buffer,
    options?: { readonly as?: string | null; readonly localAddress?: string },
  ): Promise<ApiReply>;
}

/** The web API of `petreld` as `token` (mintToken of test/tls/petreld.ts makes one). */
export async function webClient(petreld: Petreld, token: string): Promise<WebClient> {
  const api = await webApiOf(petreld);
  return {
    ...api,
    token,
    call: (method, url, template, body, options = {}) =>
      callApi({
        ...api,
        token: options.as === undefined ? token : options.as,
        method,
        url,
        template,
        headers: bodyHeaders(body),
        ...(body === undefined ? {} : { body: [Buffer.from(body)] }),
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      }),
  };
}

/** Signs in to a browser session with `token` (POST /api/v1/session), the reply checked against the document. */
export async function signIn(petreld: Petreld, token: string, localAddress?: string): Promise<WebReply> {
  const body = JSON.stringify({ token });
  const headers = { 'content-type': 'application/json' };
  const reply = await webRequest(petreld, 'POST', '/api/v1/session', headers, body, localAddress);
  checkResponse('POST', '/api/v1/session', reply.status, JSON.parse(reply.text));
  return reply;
}

/** The session a sign-in made: its cookie (`name=value`, as a browser sends it back) and CSRF token. */
export function sessionOf(reply: WebReply): { cookie: string; csrf: string } {
  const set = reply.headers['set-cookie'];
  const cookie = String(Array.isArray(set) ? set[0] : set).split(';')[0] as string;
  return { cookie, csrf: String((JSON.parse(reply.text) as { csrf?: unknown }).csrf) };
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
