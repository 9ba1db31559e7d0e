// GET /api/v1/exits: the restart history petreld keeps (unikernel-exits, Petrel (l)) of the
// unikernels at or below the caller's path, for the dashboard and `petrel info --json`'s lastExit. Pure.

import { type Path, pathName } from '../resources/name.js';
import type { Json } from '../wire/json.js';
import { type ApiResponse, type Ask, answered } from './api.js';

export async function listExits(path: Path, ask: Ask): Promise<ApiResponse> {
  const answer = await ask(pathName(path), { type: 'unikernel-exits' });
  if (answer.kind !== 'reply' || answer.reply.type !== 'unikernel-exits')
    return answered(answer, 'unikernel-exits');
  // Names are relative to the path asked about, as a listing's.
  const items: Json[] = answer.reply.entries
    .filter((e) => e.name.label !== null)
    .map(({ name, info }) => ({
      name: [...name.path, name.label].join(':'),
      state: info.outcome.kind,
      exit: info.exit,
      limit: info.limit,
      at: info.at.toISOString(),
      restarts: info.restarts,
      ...(info.outcome.kind === 'restarting' ? { restartAt: info.outcome.restartAt.toISOString() } : {}),
      ...(info.outcome.kind === 'dropped' ? { reason: info.outcome.reason } : {}),
    }));
  return { status: 200, body: { items } };
}
