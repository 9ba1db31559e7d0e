// The web API's router: the handler of every action, by resource (routes.ts matches a method and
// path to its action; handlers/ answer it). A new route is a line here and one in routes.ts.

import * as blocks from './handlers/blocks.js';
import type { Handler } from './handlers/call.js';
import * as consoles from './handlers/consoles.js';
import * as nodes from './handlers/nodes.js';
import * as policies from './handlers/policies.js';
import * as unikernels from './handlers/unikernels.js';
import type { Action } from './routes.js';

export const HANDLERS: { readonly [A in Action]: Handler } = {
  node: nodes.node,
  fleet: nodes.fleet,

  list: unikernels.list,
  get: unikernels.get,
  create: unikernels.create,
  replace: unikernels.replace,
  destroy: unikernels.destroy,
  restart: unikernels.restart,
  image: unikernels.image,
  samples: unikernels.samples,
  exits: unikernels.exits,

  console: consoles.follow,
  stats: consoles.stats,

  blocks: blocks.list,
  'block-add': blocks.add,
  'block-remove': blocks.remove,
  'block-set': blocks.set,
  'block-dump': blocks.dump,

  policies: policies.list,
  'policy-add': policies.add,
  'policy-remove': policies.remove,
};
