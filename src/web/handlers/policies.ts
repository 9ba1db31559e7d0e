// The web API's policies: those at and below the caller's delegation, and adding or removing one
// strictly below it (../policies.ts says why), the engine's checks and messages deciding the rest.

import { pathName } from '../../resources/name.js';
import { apiError, EXIT } from '../api.js';
import { listPolicies, policyChanged, policyCommand, policyPathUnder } from '../policies.js';
import type { Handler } from './call.js';

/** GET /api/v1/policies */
export const list: Handler = (call) => listPolicies(call.token.path, call.ask);

/** PUT /api/v1/policies/{path}?vms=N&…: 201 when added, 200 when it was there already. */
export const add: Handler = async (call) => {
  const target = policyPathUnder(call.token.path, call.text);
  if (!target.ok) return target.error;
  const command = policyCommand(call.query);
  if (!command.ok) return command.error;
  const answer = await call.ask(pathName(target.value), command.value);
  const added =
    answer.kind === 'reply' && answer.reply.type === 'string' && answer.reply.text === 'added policy';
  return policyChanged(call.text, answer, added ? 201 : 200);
};

/** DELETE /api/v1/policies/{path} */
export const remove: Handler = async (call) => {
  const target = policyPathUnder(call.token.path, call.text);
  if (!target.ok) return target.error;
  for (const key of call.query.keys())
    return apiError(
      400,
      'E_WEB_QUERY',
      `unknown parameter ${JSON.stringify(key)} (a removal takes none)`,
      EXIT.usage,
    );
  return policyChanged(call.text, await call.ask(pathName(target.value), { type: 'policy-remove' }), 200);
};
