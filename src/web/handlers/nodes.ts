// The web API's nodes: GET /api/v1/node, who the caller is on this one and what it uses here, and
// GET /api/v1/fleet, the registry's fresh nodes with their web origins (../fleet.ts).

import { nodeInfo } from '../api.js';
import type { Handler } from './call.js';

export const node: Handler = (call) => {
  const { token } = call;
  const caller = { tokenName: token.name, tokenId: token.id, expires: token.expires, path: token.path };
  return nodeInfo(caller, call.ask);
};

export const fleet: Handler = async (call) => {
  const fleet = await call.web.fleet.nodes();
  return { status: 200, body: { nodes: fleet.nodes.map((n) => ({ ...n })), error: fleet.error } };
};
