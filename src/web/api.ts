// The JSON API's handlers (docs/openapi.json): each turns a request into one command under the
// caller's delegation, and the answer into JSON. Names in URLs and replies are relative to the
// token's path, so a caller can neither name nor see anything outside its own subtree. Pure.

import { ok, type Result } from '../resources/errors.js';
import {
  type Name,
  nameAsPath,
  type Path,
  parseName,
  pathName,
  printName,
  printPath,
  relativeTo,
} from '../resources/name.js';
import type { Policy } from '../resources/policy.js';
import type { Json } from '../wire/json.js';
import type { Command, Reply, UnikernelInfo } from '../wire/types.js';

/** A command's answer as the proxy returned it. */
export type Answer =
  | { readonly kind: 'reply'; readonly reply: Reply }
  | { readonly kind: 'failure'; readonly message: string }
  /** No answer: petreld could not be reached, the exchange broke, or the request was refused. */
  | {
      readonly kind: 'error';
      readonly status: number;
      readonly code: string;
      readonly message: string;
      readonly exit: number;
    };

/** What a handler may do: ask petreld one command for a name (under the caller's policies). */
export type Ask = (name: Name, command: Command) => Promise<Answer>;

export interface ApiResponse {
  readonly status: number;
  readonly body: Json;
}

/** The CLI's exit statuses (albatross-client's), which every error carries as `exit`. */
export const EXIT = { refused: 117, auth: 119, protocol: 121, connect: 122, usage: 124 } as const;

export function errorBody(code: string, message: string, exit: number): Json {
  return { error: { code, message, exit } };
}

export const apiError = (status: number, code: string, message: string, exit: number): ApiResponse => ({
  status,
  body: errorBody(code, message, exit),
});

/** petreld's Failure: its text, as `petrel` prints it (exit 117). */
function refused(message: string): ApiResponse {
  // The texts are Albatross's; "… not found" is the one a client wants to tell apart.
  return apiError(
    /(not found|no unikernel found|unknown policy)$/.test(message) ? 404 : 409,
    'E_REFUSED',
    message,
    EXIT.refused,
  );
}

/** Anything but the reply expected is a failure or a broken exchange, answered as the CLI would. */
export function answered(answer: Answer, want: string): ApiResponse {
  if (answer.kind === 'failure') return refused(answer.message);
  if (answer.kind === 'error') return apiError(answer.status, answer.code, answer.message, answer.exit);
  return apiError(
    502,
    'E_CLIENT_PROTOCOL',
    `petreld answered ${answer.reply.type} where ${want} was expected`,
    EXIT.protocol,
  );
}

/** A name in a URL, relative to the caller's path (`web`, `bob:web`), as the full name. */
export function nameUnder(path: Path, text: string): Result<Name, ApiResponse> {
  const full = path.length === 0 ? text : `${printPath(path)}:${text}`;
  const name = text === '' || text.startsWith(':') ? null : parseName(full);
  if (name === null || !name.ok || name.value.label === null) {
    const why = name !== null && !name.ok ? name.error.message : 'a unikernel name is needed';
    return {
      ok: false,
      error: apiError(
        400,
        'E_NAME_INVALID',
        `invalid unikernel name ${JSON.stringify(text)}: ${why}`,
        EXIT.usage,
      ),
    };
  }
  return ok(name.value);
}

/** A name relative to the caller's path, as URLs take it: `web`, `bob:web`. */
export function relativeText(path: Path, name: Name): string | null {
  const rel = relativeTo(path, name);
  if (rel === null || rel.label === null) return null;
  return [...rel.path, rel.label].join(':');
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** `relative`: its name below the caller's path, as a listing carries it. */
export function unikernelJson(path: Path, relative: Name, info: UnikernelInfo): Json {
  const full: Name = { path: [...path, ...relative.path], label: relative.label } as Name;
  return {
    name: [...relative.path, relative.label].join(':'),
    fullName: printName(full),
    // info lists what runs: a unikernel waiting for its restart is not among them.
    state: 'running',
    type: info.typ,
    memory: info.memory,
    cpus: info.cpus,
    cpuids: [...info.cpuids],
    networks: info.bridges.map((n) => ({ netif: n.netif, bridge: n.bridge, mac: n.mac })),
    blocks: info.blocks.map((b) => ({
      device: b.device,
      hostDevice: b.hostDevice,
      sectorSize: b.sectorSize,
      size: b.blockSize,
    })),
    digest: hex(info.digest),
    started: info.started.toISOString(),
    restartOnFail: info.failBehaviour.kind === 'restart',
    arguments: [...(info.arguments ?? [])],
  };
}

/** `relative`: the policy's place below the caller's path, as policy info carries it. */
export function policyJson(path: Path, relative: Name, policy: Policy): Json {
  const below = nameAsPath(relative);
  return {
    path: printPath([...path, ...below]),
    // The caller's own delegation is "", the ones below it are relative to it.
    relative: printPath(below),
    unikernels: Number(policy.vms),
    memory: policy.memory,
    cpuids: [...policy.cpuids],
    block: policy.block,
    bridges: [...policy.bridges],
  };
}

/** The running unikernels at or below the caller's path, sorted by name. */
async function running(path: Path, ask: Ask): Promise<Result<Json[], ApiResponse>> {
  const answer = await ask(pathName(path), { type: 'unikernel-info', release: '2.7' });
  if (answer.kind !== 'reply' || answer.reply.type !== 'unikernel-info' || answer.reply.release !== '2.7') {
    return { ok: false, error: answered(answer, 'unikernel-info') };
  }
  // A listing's names are relative to the path asked about (the engine's info).
  const items = answer.reply.entries
    .filter((e) => e.name.label !== null)
    .map((e) => unikernelJson(path, e.name, e.info))
    .sort((a, b) => compare(field(a, 'name'), field(b, 'name')));
  return ok(items);
}

const field = (value: Json, key: string): string =>
  String((value as { readonly [k: string]: Json })[key] ?? '');
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const PAGE = { default: 100, max: 1000 } as const;

/** GET /api/v1/unikernels?limit=N&after=NAME */
export async function listUnikernels(path: Path, query: URLSearchParams, ask: Ask): Promise<ApiResponse> {
  const limitText = query.get('limit');
  const limit =
    limitText === null ? PAGE.default : /^\d{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN;
  if (!(limit >= 1 && limit <= PAGE.max)) {
    return apiError(
      400,
      'E_WEB_QUERY',
      `limit must be a whole number from 1 to ${PAGE.max}, not ${JSON.stringify(limitText)}`,
      EXIT.usage,
    );
  }
  const after = query.get('after');
  const all = await running(path, ask);
  if (!all.ok) return all.error;
  const rest = after === null ? all.value : all.value.filter((u) => field(u, 'name') > after);
  const items = rest.slice(0, limit);
  const next = rest.length > limit ? field(items.at(-1) as Json, 'name') : null;
  return { status: 200, body: { items, next, total: all.value.length } };
}

/** GET /api/v1/unikernels/{name} */
export async function getUnikernel(path: Path, text: string, ask: Ask): Promise<ApiResponse> {
  const name = nameUnder(path, text);
  if (!name.ok) return name.error;
  const answer = await ask(name.value, { type: 'unikernel-info', release: '2.7' });
  if (answer.kind !== 'reply' || answer.reply.type !== 'unikernel-info' || answer.reply.release !== '2.7') {
    return answered(answer, 'unikernel-info');
  }
  const entry = answer.reply.entries.find((e) => printName(e.name) === printName(name.value));
  if (entry === undefined)
    return apiError(404, 'E_WEB_NO_UNIKERNEL', `no unikernel ${text} is running`, EXIT.refused);
  const relative = relativeTo(path, entry.name);
  if (relative === null)
    return apiError(404, 'E_WEB_NO_UNIKERNEL', `no unikernel ${text} is running`, EXIT.refused);
  return { status: 200, body: unikernelJson(path, relative, entry.info) };
}

/** The string replies of changes ("destroyed unikernel"), as `petrel … --json` prints them. */
async function change(path: Path, text: string, command: Command, ask: Ask): Promise<ApiResponse> {
  const name = nameUnder(path, text);
  if (!name.ok) return name.error;
  const answer = await ask(name.value, command);
  if (answer.kind !== 'reply' || answer.reply.type !== 'string') return answered(answer, 'string');
  return { status: 200, body: { name: text, reply: answer.reply.text } };
}

/** DELETE /api/v1/unikernels/{name} */
export const destroyUnikernel = (path: Path, text: string, ask: Ask): Promise<ApiResponse> =>
  change(path, text, { type: 'unikernel-destroy' }, ask);

/** POST /api/v1/unikernels/{name}/restart (the configuration kept) */
export const restartUnikernel = (path: Path, text: string, ask: Ask): Promise<ApiResponse> =>
  change(path, text, { type: 'unikernel-restart', form: 'keep' }, ask);

export interface Caller {
  readonly tokenName: string;
  readonly tokenId: string;
  readonly expires: Date;
  readonly path: Path;
}

/** GET /api/v1/node: who the caller is here, its policies and what of them it uses. */
export async function nodeInfo(caller: Caller, ask: Ask): Promise<ApiResponse> {
  const policies = await ask(pathName(caller.path), { type: 'policy-info' });
  if (policies.kind !== 'reply' || policies.reply.type !== 'policies') return answered(policies, 'policies');
  const all = await running(caller.path, ask);
  if (!all.ok) return all.error;
  const memory = all.value.reduce<number>(
    (sum, u) => sum + Number((u as { memory?: number }).memory ?? 0),
    0,
  );
  return {
    status: 200,
    body: {
      api: 1,
      token: { name: caller.tokenName, id: caller.tokenId, expires: caller.expires.toISOString() },
      delegation: printPath(caller.path),
      policies: policies.reply.entries.map((p) => policyJson(caller.path, p.name, p.policy)),
      usage: { unikernels: all.value.length, memory },
    },
  };
}

/** GET /api/v1/blocks: the block devices at or below the caller's path, sorted by name. */
export async function listBlocks(path: Path, ask: Ask): Promise<ApiResponse> {
  const answer = await ask(pathName(path), { type: 'block-info' });
  if (answer.kind !== 'reply' || answer.reply.type !== 'block-devices')
    return answered(answer, 'block-devices');
  // A listing's names are relative to the path asked about, as the unikernels'.
  const items = answer.reply.entries
    .filter((b) => b.name.label !== null)
    .map((b) => ({
      name: [...b.name.path, b.name.label].join(':'),
      fullName: printName({ path: [...path, ...b.name.path], label: b.name.label } as Name),
      size: b.size,
      inUse: b.active,
    }))
    .sort((a, b) => compare(a.name, b.name));
  return { status: 200, body: { items } };
}

/** PUT /api/v1/blocks/{name}?size=MIB: a zero-filled block device (petrel block add NAME MIB). */
export async function addBlock(
  path: Path,
  text: string,
  query: URLSearchParams,
  ask: Ask,
): Promise<ApiResponse> {
  const name = nameUnder(path, text);
  if (!name.ok) return name.error;
  for (const key of query.keys()) {
    if (key !== 'size')
      return apiError(
        400,
        'E_WEB_QUERY',
        `unknown parameter ${JSON.stringify(key)} (a block device takes size)`,
        EXIT.usage,
      );
  }
  const sizeText = query.get('size');
  const size = sizeText !== null && /^\d{1,7}$/.test(sizeText) ? Number(sizeText) : Number.NaN;
  if (!(size >= 1)) {
    return apiError(
      400,
      'E_WEB_QUERY',
      `size must be a whole number of MiB, at least 1 (got ${JSON.stringify(sizeText)})`,
      EXIT.usage,
    );
  }
  const answer = await ask(name.value, { type: 'block-add', size });
  if (answer.kind !== 'reply' || answer.reply.type !== 'string') return answered(answer, 'string');
  return { status: 201, body: { name: text, reply: answer.reply.text } };
}

/** DELETE /api/v1/blocks/{name} */
export const removeBlock = (path: Path, text: string, ask: Ask): Promise<ApiResponse> =>
  change(path, text, { type: 'block-remove' }, ask);
