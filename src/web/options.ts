// What petreld gives its web API's listener (server.ts): every option, its default where it has
// one. The daemon fills them from its configuration, the TLS endpoint process from its flags.

import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Service } from '../tls/proxy.js';
import type { AdmissionSettings, SocketPaths } from '../tls/settings.js';
import type { Revocations } from './auth.js';
import type { FleetSource } from './fleet.js';

export interface WebServerOptions {
  /** The CA (PEM or DER) tokens must lead to: the TLS endpoint's `tlsCa`. */
  readonly ca: string | Uint8Array;
  /** The certificate browsers are shown (`petrel ca web-cert`) and its key, PEM. */
  readonly cert: string | Uint8Array;
  readonly key: string | Uint8Array;
  readonly sockets: SocketPaths;
  /** `<stateDir>/web-deny-list`. */
  readonly denyList: string;
  /**
   * The fleet registry's deny-list (src/fleet/revocations.ts) when `fleetDb` is set, honoured
   * beside the file; stopped when the listener closes.
   */
  readonly revocations?: Revocations;
  /** This node's id in the fleet (`nodeId`). Default: the host name. */
  readonly nodeId?: string;
  /**
   * The registry's nodes and their web origins when `fleetDb` is set (fleet.ts): GET
   * /api/v1/fleet, the CORS answered to the other nodes' pages, the dashboard's connect-src.
   * Stopped when the listener closes.
   */
  readonly fleet?: FleetSource;
  /** `<stateDir>/web-token-usage.json`; none: counts are kept in memory only. */
  readonly usage?: string;
  /** Default `::`. */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Requests of one delegation's path at once (consoles included). Default 64. */
  readonly maxConnectionsPerIdentity?: number;
  /** The longest pause inside a request's body (a create's image, a block's data). Default 30 s. */
  readonly frameStallTimeoutMs?: number;
  /** The largest frame to or from petreld. Default 64 MiB. */
  readonly maxFrameBytes?: number;
  readonly admission?: Partial<AdmissionSettings>;
  readonly logger?: Logger;
  /** Tokens are checked against this clock. Default: the system clock. */
  readonly clock?: () => Date;
  /** In-memory connections to petreld's handlers when petreld hosts the listener. */
  readonly openService?: (service: Service) => Duplex | null;
  /** A browser session ends after this long without a request (`webSessionIdleTimeout`). Default 1 h. */
  readonly sessionIdleTimeoutMs?: number;
  /** Where the dashboard's built files are; default: found beside this module (dashboard-files.ts). */
  readonly dashboardDir?: string | null;
  /** petreld's statsInterval: the spacing of the dashboard's samples (samples.ts). Default 10 s. */
  readonly statsIntervalMs?: number;
}

/** `webSessionIdleTimeout`'s default. */
export const SESSION_IDLE_DEFAULT_MS = 60 * 60 * 1000;
