// What the dashboard reads from the API (docs/openapi.json), as the browser sees it.

export interface Unikernel {
  readonly name: string;
  readonly fullName: string;
  readonly state: string;
  readonly type: string;
  readonly memory: number;
  readonly cpus: number;
  readonly cpuids: readonly number[];
  readonly networks: readonly { readonly netif: string; readonly bridge: string; readonly mac: string }[];
  readonly blocks: readonly { readonly device: string; readonly hostDevice: string; readonly size: number }[];
  readonly digest: string;
  readonly started: string;
  readonly restartOnFail: boolean;
  readonly arguments: readonly string[];
}

export interface Policy {
  readonly path: string;
  readonly relative: string;
  readonly unikernels: number;
  readonly memory: number;
  readonly cpuids: readonly number[];
  readonly block: number | null;
  readonly bridges: readonly string[];
  /** What runs below it now (GET /api/v1/policies). */
  readonly usage: {
    readonly unikernels: number;
    readonly memory: number;
    readonly cpuids: readonly number[];
    readonly block: number;
  };
}

export interface Exit {
  readonly name: string;
  readonly state: string;
  readonly exit: string;
  readonly limit: string | null;
  readonly at: string;
  readonly restarts: number;
  readonly restartAt?: string;
  readonly reason?: string;
}

export interface Block {
  readonly name: string;
  readonly size: number;
  readonly inUse: boolean;
}

export interface Session {
  readonly csrf: string;
  readonly delegation: string;
  readonly token: { readonly name: string; readonly expires: string };
}

/** A node of the fleet (GET /api/v1/fleet). */
export interface FleetNode {
  readonly id: string;
  readonly origin: string | null;
  readonly self: boolean;
  readonly lastSeen: string | null;
}
