// The web API's policies (docs/web.md "Policies"): the ones at and below the caller's delegation
// with what is used of each, and adding or removing one STRICTLY below it. That is the authority
// mutual TLS gives a delegation: its key signs sub-delegations (a chain's `policy add`, installed
// by petreld when the chain is used), while a TLS leaf may carry no policy add or remove at all
// (§14.2 step 5), so nothing at or above its own path; the engine refuses a sub-policy that does
// not fit the one above (§4.3), and its message is the answer. Pure.

import { ok, type Result } from '../resources/errors.js';
import {
  isPrefix,
  type Name,
  nameAsPath,
  type Path,
  parsePath,
  pathName,
  printPath,
} from '../resources/name.js';
import { makePolicy, usable } from '../resources/policy.js';
import type { Json } from '../wire/json.js';
import type { Command } from '../wire/types.js';
import { type Answer, type ApiResponse, type Ask, answered, apiError, EXIT, policyJson } from './api.js';

const queryError = (message: string): ApiResponse => apiError(400, 'E_WEB_QUERY', message, EXIT.usage);

/** GET /api/v1/policies: the policies at and below the caller's path, each with its usage. */
export async function listPolicies(path: Path, ask: Ask): Promise<ApiResponse> {
  const here = pathName(path);
  const policies = await ask(here, { type: 'policy-info' });
  if (policies.kind !== 'reply' || policies.reply.type !== 'policies') return answered(policies, 'policies');
  const vms = await ask(here, { type: 'unikernel-info', release: '2.7' });
  if (vms.kind !== 'reply' || vms.reply.type !== 'unikernel-info' || vms.reply.release !== '2.7')
    return answered(vms, 'unikernel-info');
  const blocks = await ask(here, { type: 'block-info' });
  if (blocks.kind !== 'reply' || blocks.reply.type !== 'block-devices')
    return answered(blocks, 'block-devices');
  // The names of both listings are relative to the caller's path, as the policies' are.
  const running = vms.reply.entries.filter((e) => e.name.label !== null);
  const devices = blocks.reply.entries.filter((b) => b.name.label !== null);
  const items = policies.reply.entries
    .map((p) => {
      const below = nameAsPath(p.name);
      const inside = (name: Name) => isPrefix(below, name.path);
      const mine = running.filter((e) => inside(e.name));
      const usage = {
        unikernels: mine.length,
        memory: mine.reduce((sum, e) => sum + e.info.memory, 0),
        cpuids: [...new Set(mine.flatMap((e) => [...e.info.cpuids]))].sort((a, b) => a - b),
        block: devices.filter((b) => inside(b.name)).reduce((sum, b) => sum + b.size, 0),
      };
      return { ...(policyJson(path, p.name, p.policy) as Record<string, Json>), usage } as Record<
        string,
        Json
      >;
    })
    .sort((a, b) => (String(a.path) < String(b.path) ? -1 : String(a.path) > String(b.path) ? 1 : 0));
  return { status: 200, body: { items } };
}

/**
 * The path a URL names, relative to the caller's (`team`, `team:ops`), as a full path strictly
 * below it: the caller's own path (`:`, empty) is refused, and nothing above it can be named.
 */
export function policyPathUnder(path: Path, text: string): Result<Path, ApiResponse> {
  const trimmed = text.endsWith(':') ? text.slice(0, -1) : text;
  if (trimmed === '' || trimmed === '.') {
    return {
      ok: false,
      error: apiError(
        403,
        'E_WEB_POLICY_SCOPE',
        `${printPath(path)}: may add or remove policies only below itself, not its own (its own comes with its delegation)`,
        EXIT.refused,
      ),
    };
  }
  const below = parsePath(trimmed);
  if (!below.ok)
    return {
      ok: false,
      error: apiError(
        400,
        'E_NAME_INVALID',
        `invalid policy path ${JSON.stringify(text)}: ${below.error.message}`,
        EXIT.usage,
      ),
    };
  return ok([...path, ...below.value] as unknown as Path);
}

/** A whole number of a query parameter. */
function whole(
  query: URLSearchParams,
  key: string,
  fallback: number | null,
): Result<number | null, ApiResponse> {
  const values = query.getAll(key);
  if (values.length > 1) return { ok: false, error: queryError(`${key} is given more than once`) };
  if (values.length === 0) return ok(fallback);
  const text = values[0] as string;
  if (!/^\d{1,10}$/.test(text) || Number(text) > 2 ** 31 - 1)
    return { ok: false, error: queryError(`${key} must be a whole number, not ${JSON.stringify(text)}`) };
  return ok(Number(text));
}

const POLICY_KEYS = ['vms', 'mem', 'cpus', 'block', 'bridge'];

/**
 * PUT /api/v1/policies/{path}?vms=N&mem=MIB&cpus=0,1&block=MIB&bridge=NAME: named and defaulted
 * as `petrel policy add`'s flags (mem 512, cpus 0, block none, no bridges).
 */
export function policyCommand(query: URLSearchParams): Result<Command, ApiResponse> {
  for (const key of query.keys())
    if (!POLICY_KEYS.includes(key))
      return {
        ok: false,
        error: queryError(
          `unknown parameter ${JSON.stringify(key)} (a policy takes ${POLICY_KEYS.join(', ')})`,
        ),
      };
  const vms = whole(query, 'vms', null);
  if (!vms.ok) return vms;
  if (vms.value === null) return { ok: false, error: queryError('a policy needs vms (its most unikernels)') };
  const memory = whole(query, 'mem', 512);
  if (!memory.ok) return memory;
  const block = whole(query, 'block', null);
  if (!block.ok) return block;
  const split = (key: string) =>
    query
      .getAll(key)
      .flatMap((v) => v.split(','))
      .map((s) => s.trim())
      .filter((s) => s !== '');
  const cpuTexts = query.has('cpus') ? split('cpus') : ['0'];
  const cpuids: number[] = [];
  for (const id of cpuTexts) {
    if (!/^\d{1,5}$/.test(id))
      return { ok: false, error: queryError(`cpus must list CPU ids, not ${JSON.stringify(id)}`) };
    cpuids.push(Number(id));
  }
  const policy = makePolicy({
    vms: vms.value,
    memory: memory.value as number,
    cpuids,
    block: block.value,
    bridges: split('bridge'),
  });
  if (!policy.ok) return { ok: false, error: queryError(policy.error.message) };
  const fit = usable(policy.value);
  if (!fit.ok) return { ok: false, error: queryError(fit.error.message) };
  return ok({ type: 'policy-add', policy: policy.value });
}

/** A policy change's answer: petreld's string reply, or its Failure (the engine's message). */
export function policyChanged(text: string, answer: Answer, status: number): ApiResponse {
  if (answer.kind !== 'reply' || answer.reply.type !== 'string') return answered(answer, 'string');
  return { status, body: { name: text, reply: answer.reply.text } };
}
