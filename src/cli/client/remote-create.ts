// `petrel fleet create`'s last step: create the unikernel on the node placement chose, over
// mutual TLS with the caller's delegation (src/tls/client.ts), exactly as `petrel create --remote`;
// and the name the node will know it by (the delegation's path before a bare label). The request
// and creator types live here, not in commands/fleet.ts, so neither module imports the other back.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseNodeAddress } from '../../fleet/node.js';
import { err, ok, type Result } from '../../resources/errors.js';
import { childName, type Path, parseName, printName } from '../../resources/name.js';
import { solo5Config } from '../../wire/shapes.js';
import type { CreateCommand, NetSpec } from '../../wire/types.js';
import { parseNet } from './config.js';
import { Stop } from './shell.js';

/** What `fleet create` asks of the node it chose. */
export interface RemoteCreateRequest {
  readonly node: string;
  /** The node's `--node-address HOST:PORT`. */
  readonly address: string;
  readonly name: string;
  readonly image: Uint8Array;
  readonly memoryMiB: number;
  readonly cpus: number;
  /** `--net` values as given (`[netif:]bridge[@mac]`). */
  readonly nets: readonly string[];
  readonly args: readonly string[];
  readonly tls: { readonly ca?: string; readonly cert?: string; readonly key?: string };
}

/** Creates a unikernel on a remote node over mutual TLS; `by` names the client (for the audit). */
export interface RemoteCreator {
  create(request: RemoteCreateRequest): Promise<Result<{ readonly by: string; readonly reply: string }>>;
  /** The name the node will list the unikernel under (default: NAME as given). */
  nameOnNode?(name: string, tls: RemoteCreateRequest['tls']): Promise<Result<string>>;
}

/**
 * NAME as a delegation at `delegation` means it: the endpoint puts the delegation's path before a
 * bare label (src/tls/client.ts 2.), so `web` with alice's delegation is `alice:web`; a name with
 * a path is the full name already. `fleet deploy` and `fleet rm` sign for this name.
 */
export function nameUnder(name: string, delegation: Path): Result<string> {
  const parsed = parseName(name);
  if (!parsed.ok) return parsed;
  const { label } = parsed.value;
  if (parsed.value.path.length > 0 || label === null) return ok(printName(parsed.value));
  return ok(printName(childName(delegation, label)));
}

/** The name the node will know NAME by: nameUnder the --tls-cert delegation's path. */
async function nameOnNode(name: string, cert: string | undefined): Promise<Result<string>> {
  const parsed = parseName(name);
  if (!parsed.ok) return parsed;
  if (parsed.value.path.length > 0 || cert === undefined || parsed.value.label === null)
    return ok(printName(parsed.value));
  let bytes: Uint8Array;
  try {
    bytes = await readFile(cert);
  } catch (e) {
    return err(
      'E_FLEET_TLS',
      `cannot read --tls-cert ${cert}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  const [{ decodeDer, parseCertificate }, { delegationOf }] = await Promise.all([
    import('../../tls/certs.js'),
    import('../../tls/identity.js'),
  ]);
  const chain = [];
  for (const der of decodeDer(bytes)) {
    const cert = parseCertificate(der);
    if (!cert.ok) return err('E_FLEET_TLS', `--tls-cert: ${cert.error.message}`);
    chain.push(cert.value);
  }
  const delegation = delegationOf(chain);
  if (!delegation.ok) return err('E_FLEET_TLS', `--tls-cert: ${delegation.error.message}`);
  return nameUnder(name, delegation.value.path);
}

/** What the fleet's create options ask for, as the create command a node receives (or a proof signs). */
export function fleetCreate(
  image: Uint8Array,
  options: {
    readonly memoryMiB: number;
    readonly cpus: number;
    readonly nets: readonly NetSpec[];
    readonly args: readonly string[];
  },
): CreateCommand {
  return {
    type: 'unikernel-create',
    force: false,
    release: '2.7',
    config: solo5Config(image, {
      memory: options.memoryMiB,
      bridges: options.nets,
      arguments: options.args,
      cpus: options.cpus,
    }),
  };
}

export const tlsCreator: RemoteCreator = {
  nameOnNode: (name, tls) => nameOnNode(name, tls.cert),

  async create(request: RemoteCreateRequest) {
    const { ca, cert, key } = request.tls;
    if (ca === undefined || cert === undefined || key === undefined) {
      return err(
        'E_FLEET_TLS',
        'fleet create needs --tls-ca, --tls-cert and --tls-key (a delegation from petrel ca)',
      );
    }
    const address = parseNodeAddress(request.address);
    if (!address.ok) return address;
    const colon = address.value.lastIndexOf(':');
    const host = address.value.slice(0, colon).replace(/^\[(.*)\]$/u, '$1');
    const port = Number(address.value.slice(colon + 1));
    const name = parseName(request.name);
    if (!name.ok) return name;
    let nets: NetSpec[];
    try {
      nets = request.nets.map(parseNet);
    } catch (e) {
      return err('E_FLEET_TLS', e instanceof Stop ? e.message : String(e));
    }
    const { createRemoteTransport } = await import('../../tls/client.js');
    const transport = createRemoteTransport({
      host,
      port,
      ca,
      cert,
      key,
    });
    const answer = await transport.request(name.value, fleetCreate(request.image, { ...request, nets }));
    if (!answer.ok) return answer;
    if (answer.value.kind === 'failure') return err('E_FLEET_REFUSED', answer.value.message);
    const reply = answer.value.reply.type === 'string' ? answer.value.reply.text : answer.value.reply.type;
    // The delegation's file is named after its path (`petrel ca delegate alice` writes alice.pem).
    return ok({ by: path.basename(cert, '.pem'), reply });
  },
};
