// The Albatross wire messages as TypeScript values (albatross-wire.md §4): one discriminated union
// per CHOICE. Old shapes keep their own types so a decoded value re-encodes under its own tag.

import type { LivenessCheck } from '../resources/liveness.js';
import type { Label, Name, Path } from '../resources/name.js';
import type { Policy } from '../resources/policy.js';

/** Lower-case hex pairs joined by `:` (six of them); built only by `parseMac`/`macFromBytes`. */
declare const macBrand: unique symbol;
export type MacAddress = string & { readonly [macBrand]: true };

export const WIRE_VERSION = 5;

export interface Header {
  readonly version: typeof WIRE_VERSION;
  /** Opaque 8-byte sequence number, echoed byte for byte in replies (signed 64-bit). */
  readonly sequence: bigint;
  readonly name: Name;
}

export interface Wire {
  readonly header: Header;
  readonly payload: Payload;
}

export type Payload =
  | { readonly kind: 'command'; readonly command: Command }
  | { readonly kind: 'reply'; readonly reply: Reply }
  | { readonly kind: 'failure'; readonly message: string }
  | { readonly kind: 'data'; readonly data: Data };

// --- shared configuration pieces (§4.8) -----------------------------------------------------

export type Typ = 'solo5' | 'bhyve';

export type FailBehaviour =
  | { readonly kind: 'quit' }
  /** Restart on the listed exit codes; an empty list means on any qualifying exit. */
  | { readonly kind: 'restart'; readonly exitCodes: readonly number[] };

export interface BlockSpec {
  /** Device name inside the unikernel. */
  readonly device: string;
  /** Host block device label; null = same as `device`. */
  readonly hostDevice: string | null;
  /** null = the tender's default (reported as 512). */
  readonly sectorSize: number | null;
}

export interface NetSpec {
  /** Interface name inside the unikernel. */
  readonly netif: string;
  /** Host bridge; null = same as `netif`. */
  readonly bridge: string | null;
  /** null = derived from netif and name (§3.6). */
  readonly mac: MacAddress | null;
}

/** UnikernelConfig, 2.7 (create [20]/[21], state [6]). */
export interface UnikernelConfig {
  readonly typ: Typ;
  /** The image is zlib compressed. */
  readonly compressed: boolean;
  /** May be empty over TLS (streamed in raw chunks instead). A view into the decoded input. */
  readonly image: Uint8Array;
  /** Start priority; null = absent (50). */
  readonly startup: number | null;
  /** Prepend `--name=<label>` to the arguments. */
  readonly addName: boolean;
  readonly failBehaviour: FailBehaviour;
  readonly cpuids: readonly number[];
  /** MB. */
  readonly memory: number;
  readonly blocks: readonly BlockSpec[];
  readonly bridges: readonly NetSpec[];
  /** null = no argument list; [] = an empty one. */
  readonly arguments: readonly string[] | null;
  /** Number of vCPUs; always written, absent decodes as 1. */
  readonly cpus: number;
  readonly linuxBootPartition: string | null;
}

/** UnikernelConfigV4, 2.6 (create [16]/[17], state [5]): one CPU id, no vCPU count or boot partition. */
export interface UnikernelConfigV4 extends Omit<UnikernelConfig, 'cpuids' | 'cpus' | 'linuxBootPartition'> {
  readonly cpuid: number;
}

/** UnikernelConfigV3, 2.0–2.5 (create [9]/[10], state [3]/[4]): V4 without startup and addName. */
export interface UnikernelConfigV3 extends Omit<UnikernelConfigV4, 'startup' | 'addName'> {}

/** UnikernelConfigV2 (state [2], reply [3]). */
export interface UnikernelConfigV2 extends Omit<UnikernelConfigV3, 'blocks' | 'bridges'> {
  /** Block names only. */
  readonly blocks: readonly string[];
  readonly bridges: readonly { readonly netif: string; readonly bridge: string | null }[];
}

/** UnikernelConfigV1 (state [0]): bridges are plain names (netif = bridge). */
export interface UnikernelConfigV1 extends Omit<UnikernelConfigV2, 'bridges'> {
  readonly bridges: readonly string[];
}

export type ImageArch = 'hvt-amd64' | 'hvt-arm64' | 'hvt-amd64-compressed';

/** UnikernelConfigV0 (state [1]), written by 1.x. */
export interface UnikernelConfigV0 {
  readonly cpuid: number;
  readonly memory: number;
  readonly block: string | null;
  readonly networks: readonly string[] | null;
  readonly arch: ImageArch;
  readonly image: Uint8Array;
  readonly arguments: readonly string[] | null;
}

/** The configuration without its image: what a restart may change. */
type WithoutImage = 'typ' | 'compressed' | 'image';

/** UnikernelArguments, 2.7 (restart [14][3]). */
export interface UnikernelArguments extends Omit<UnikernelConfig, WithoutImage> {}

/** UnikernelArgumentsV1, 2.6 (restart [14][2]). */
export interface UnikernelArgumentsV1 extends Omit<UnikernelConfigV4, WithoutImage> {}

/** UnikernelArgumentsV0, 2.4/2.5 (restart [14][1]). */
export interface UnikernelArgumentsV0 extends Omit<UnikernelConfigV3, WithoutImage> {}

// --- commands (§4.2–§4.7) -------------------------------------------------------------------

/** Which client generation's unikernel-info tag a command used: [7] [13] [15] [18] [19]. */
export type InfoRelease = '2.0' | '2.1' | '2.4' | '2.6' | '2.7';

export type ConsoleSelect =
  | { readonly kind: 'since'; readonly since: Date }
  | { readonly kind: 'count'; readonly count: number };

export type ConsoleCommand =
  /** [0]: internal; `limit` null is the NULL form (≤ 2.6.0), else the ring limit (2.6.1+). */
  | { readonly type: 'console-add'; readonly limit: bigint | null }
  /** [1] (release 2.0, UTCTime) or [2] (release 2.1+, GeneralizedTime). */
  | { readonly type: 'console-subscribe'; readonly release: '2.0' | '2.1'; readonly select: ConsoleSelect }
  | { readonly type: 'console-list-inactive' };

export interface StatsNetwork {
  /** The unikernel-side interface name. */
  readonly bridge: string;
  readonly tap: string;
}

export type StatsCommand =
  | {
      readonly type: 'stats-add';
      readonly vmmdev: string;
      readonly pid: number;
      readonly network: readonly StatsNetwork[];
    }
  | { readonly type: 'stats-remove' }
  | { readonly type: 'stats-subscribe' }
  | { readonly type: 'stats-initial' };

export type CreateCommand = { readonly type: 'unikernel-create'; readonly force: boolean } & (
  | { readonly release: '2.0'; readonly config: UnikernelConfigV3; readonly check?: undefined }
  | { readonly release: '2.6'; readonly config: UnikernelConfigV4; readonly check?: undefined }
  | {
      readonly release: '2.7';
      readonly config: UnikernelConfig;
      /** [29], Petrel only (differences (m)): a replace, force-created then checked. */
      readonly check?: ReplaceCheck;
    }
);

/**
 * What a replace (Petrel (m)) adds to a force-create: the liveness check, and whether the new
 * image runs with the old unikernel's configuration (the command's own is then ignored but for
 * `compressed`).
 */
export interface ReplaceCheck extends LivenessCheck {
  readonly keepConfig: boolean;
}

/**
 * Restart, in the form it arrived: `legacy` = [12] NULL (2.0–2.3 clients), `keep` = [14][0] NULL
 * (keep the configuration), or [14][1]/[2]/[3] with the 2.4, 2.6 or 2.7 arguments.
 */
export type RestartCommand = { readonly type: 'unikernel-restart' } & (
  | { readonly form: 'legacy' }
  | { readonly form: 'keep' }
  | { readonly form: '2.4'; readonly args: UnikernelArgumentsV0 }
  | { readonly form: '2.6'; readonly args: UnikernelArgumentsV1 }
  | { readonly form: '2.7'; readonly args: UnikernelArguments }
);

export type UnikernelCommand =
  | { readonly type: 'unikernel-destroy' }
  | { readonly type: 'unikernel-info'; readonly release: InfoRelease }
  /** [30], Petrel only (petrel differences (l)): the last exits at or below the name. */
  | { readonly type: 'unikernel-exits' }
  | CreateCommand
  /** [11]: compression level 0..9. */
  | { readonly type: 'unikernel-get'; readonly level: number }
  | RestartCommand;

export type PolicyCommand =
  | { readonly type: 'policy-info' }
  | { readonly type: 'policy-add'; readonly policy: Policy }
  | { readonly type: 'policy-remove' };

export type BlockCommand =
  | { readonly type: 'block-info' }
  /** [1]: size in MB, zero-filled. */
  | { readonly type: 'block-add'; readonly size: number }
  | { readonly type: 'block-remove' }
  /** [3]: 2.0–2.4 clients' add. */
  | {
      readonly type: 'block-add-old';
      readonly size: number;
      readonly compressed: boolean;
      readonly data: Uint8Array | null;
    }
  /** [4]: 2.0–2.4 clients' set. */
  | { readonly type: 'block-set-old'; readonly compressed: boolean; readonly data: Uint8Array }
  /** [5]: 2.0–2.4 clients' dump (answered with the whole image). */
  | { readonly type: 'block-dump-old'; readonly level: number }
  /** [6]: streamed dump. */
  | { readonly type: 'block-dump'; readonly level: number }
  /** [7]: raw chunks follow the command. */
  | { readonly type: 'block-set'; readonly compressed: boolean };

export type Command = ConsoleCommand | StatsCommand | UnikernelCommand | PolicyCommand | BlockCommand;
export type CommandType = Command['type'];

// --- unikernel info shapes (§4.10) ----------------------------------------------------------

export interface InfoBlock {
  readonly device: string;
  readonly hostDevice: string;
  readonly sectorSize: number;
  /** MB; 0 if unknown. */
  readonly blockSize: number;
}

export interface InfoNet {
  readonly netif: string;
  readonly bridge: string;
  readonly mac: MacAddress;
}

/** UnikernelInfo, 2.7 (Success [13]). */
export interface UnikernelInfo {
  readonly typ: Typ;
  readonly startup: number | null;
  readonly failBehaviour: FailBehaviour;
  readonly cpuids: readonly number[];
  readonly memory: number;
  /** SHA-256 of the uncompressed image. */
  readonly digest: Uint8Array;
  readonly blocks: readonly InfoBlock[];
  readonly bridges: readonly InfoNet[];
  readonly arguments: readonly string[] | null;
  /** Always written; absent decodes as the epoch. */
  readonly started: Date;
  readonly cpus: number;
  readonly linuxBootPartition: string | null;
}

/** UnikernelInfoV5, 2.6 (Success [11]). */
export interface UnikernelInfoV5 {
  readonly typ: Typ;
  readonly startup: number | null;
  readonly failBehaviour: FailBehaviour;
  readonly cpuid: number;
  readonly memory: number;
  readonly digest: Uint8Array;
  readonly blocks: readonly InfoBlock[];
  readonly bridges: readonly InfoNet[];
  readonly arguments: readonly string[] | null;
  readonly started: Date | null;
}

/** UnikernelInfoV4, 2.4/2.5 (Success [9]): V5 without startup. */
export type UnikernelInfoV4 = Omit<UnikernelInfoV5, 'startup'>;

/** UnikernelInfoV3, 2.1–2.3 (Success [8]): V4 with the configuration's block and network specs. */
export interface UnikernelInfoV3 extends Omit<UnikernelInfoV4, 'blocks' | 'bridges'> {
  readonly blocks: readonly BlockSpec[];
  readonly bridges: readonly NetSpec[];
}

/** UnikernelInfoV2, 2.0 (Success [5]): V3 without the start time. */
export type UnikernelInfoV2 = Omit<UnikernelInfoV3, 'started'>;

export interface Named<T> {
  readonly name: Name;
  readonly info: T;
}

/** The unikernel-info reply of one release: its entries in that release's shape. */
interface InfoReplyOf<Release extends string, Info> {
  readonly type: 'unikernel-info';
  readonly release: Release;
  readonly entries: readonly Named<Info>[];
}

export type InfoReply =
  | InfoReplyOf<'2.0', UnikernelInfoV2>
  | InfoReplyOf<'2.1', UnikernelInfoV3>
  | InfoReplyOf<'2.4', UnikernelInfoV4>
  | InfoReplyOf<'2.6', UnikernelInfoV5>
  | InfoReplyOf<'2.7', UnikernelInfo>;

// --- unikernel exits (Petrel only, differences (l)) ------------------------------------------

/** What became of a unikernel after its last exit. */
export type ExitOutcome =
  /** Restarted on failure; it runs again. */
  | { readonly kind: 'restarted' }
  /** A restart on failure waits for its back-off until `restartAt`. */
  | { readonly kind: 'restarting'; readonly restartAt: Date }
  /** Not restarted, and so gone: why (`signal SIGXFSZ does not restart`, the rate exceeded…). */
  | { readonly kind: 'dropped'; readonly reason: string };

/** A unikernel's last exit as petreld saw it. */
export interface UnikernelExit {
  /** As petreld logs it: `exit 3`, `signal SIGXFSZ`. */
  readonly exit: string;
  /** The limit of its jail that ended it (`RLIMIT_FSIZE`, `cgroup memory`…), null if none did. */
  readonly limit: string | null;
  /** When it exited. */
  readonly at: Date;
  /** Restarts on failure within the rate window (`restartWindow`), as petreld counted them. */
  readonly restarts: number;
  readonly outcome: ExitOutcome;
}

// --- replies and data (§4.9, §4.11, §4.12) --------------------------------------------------

export interface BlockDevice {
  readonly name: Name;
  /** MB. */
  readonly size: number;
  readonly active: boolean;
}

export type Reply =
  | { readonly type: 'empty' }
  | { readonly type: 'string'; readonly text: string }
  | {
      readonly type: 'policies';
      readonly entries: readonly { readonly name: Name; readonly policy: Policy }[];
    }
  /** [3]: answered reserved pre-2.0 commands; decoded, never sent by Petrel. */
  | {
      readonly type: 'unikernels-old';
      readonly entries: readonly { readonly name: Name; readonly config: UnikernelConfigV2 }[];
    }
  | { readonly type: 'block-devices'; readonly entries: readonly BlockDevice[] }
  | InfoReply
  | { readonly type: 'unikernel-image'; readonly compressed: boolean; readonly image: Uint8Array }
  | { readonly type: 'block-image-old'; readonly compressed: boolean; readonly image: Uint8Array }
  /** [10]: Data block frames follow. */
  | { readonly type: 'block-device-image'; readonly compressed: boolean }
  | { readonly type: 'consoles'; readonly names: readonly Name[] }
  /** [30], Petrel only (differences (l)): names relative to the path asked, as in info. */
  | { readonly type: 'unikernel-exits'; readonly entries: readonly Named<UnikernelExit>[] };

export type ReplyType = Reply['type'];

export interface Timeval {
  readonly seconds: bigint;
  readonly microseconds: number;
}

export interface Rusage {
  readonly utime: Timeval;
  readonly stime: Timeval;
  readonly maxrss: bigint;
  readonly ixrss: bigint;
  readonly idrss: bigint;
  readonly isrss: bigint;
  readonly minflt: bigint;
  readonly majflt: bigint;
  readonly nswap: bigint;
  readonly inblock: bigint;
  readonly outblock: bigint;
  readonly msgsnd: bigint;
  readonly msgrcv: bigint;
  readonly nsignals: bigint;
  readonly nvcsw: bigint;
  readonly nivcsw: bigint;
}

export interface KinfoMem {
  readonly vsize: bigint;
  readonly rss: bigint;
  readonly tsize: bigint;
  readonly dsize: bigint;
  readonly ssize: bigint;
  /** Microseconds. */
  readonly runtime: bigint;
  readonly cow: number;
  readonly start: Timeval;
}

export interface Ifdata {
  /** The unikernel-side interface name. */
  readonly bridge: string;
  readonly flags: number;
  readonly sendLength: number;
  readonly maxSendLength: number;
  readonly sendDrops: number;
  readonly mtu: number;
  readonly baudrate: bigint;
  readonly inputPackets: bigint;
  readonly inputErrors: bigint;
  readonly outputPackets: bigint;
  readonly outputErrors: bigint;
  readonly collisions: bigint;
  readonly inputBytes: bigint;
  readonly outputBytes: bigint;
  readonly inputMcast: bigint;
  readonly outputMcast: bigint;
  readonly inputDropped: bigint;
  readonly outputDropped: bigint;
}

export interface StatsData {
  readonly rusage: Rusage;
  readonly ifdata: readonly Ifdata[];
  /** FreeBSD only; null when absent. */
  readonly vmmStats: readonly { readonly key: string; readonly value: bigint }[] | null;
  readonly kinfoMem: KinfoMem | null;
}

export type Data =
  /** [0]: console line for [1] subscribers (UTCTime, one-second precision). */
  | { readonly type: 'console-old'; readonly timestamp: Date; readonly line: Uint8Array }
  | { readonly type: 'statistics'; readonly stats: StatsData }
  /** [3]: console line; the bytes are not validated (a unikernel may print anything). */
  | { readonly type: 'console'; readonly timestamp: Date; readonly line: Uint8Array }
  /** [4]: a block dump chunk; null is `no-data`, the end of the dump. */
  | { readonly type: 'block'; readonly data: Uint8Array | null };

// --- state file (§5) ------------------------------------------------------------------------

export interface StateUnikernel<C> {
  readonly name: Name;
  readonly config: C;
}

export interface StatePolicy {
  readonly path: Path;
  readonly policy: Policy;
}

export type State =
  | { readonly version: 0; readonly unikernels: readonly StateUnikernel<UnikernelConfigV1>[] }
  | { readonly version: 1; readonly unikernels: readonly StateUnikernel<UnikernelConfigV0>[] }
  | { readonly version: 2; readonly unikernels: readonly StateUnikernel<UnikernelConfigV2>[] }
  | { readonly version: 3; readonly unikernels: readonly StateUnikernel<UnikernelConfigV3>[] }
  | {
      readonly version: 4;
      readonly unikernels: readonly StateUnikernel<UnikernelConfigV3>[];
      readonly policies: readonly StatePolicy[];
    }
  | {
      readonly version: 5;
      readonly unikernels: readonly StateUnikernel<UnikernelConfigV4>[];
      readonly policies: readonly StatePolicy[];
    }
  | CurrentState;

/** The version Petrel writes. */
export interface CurrentState {
  readonly version: 6;
  readonly unikernels: readonly StateUnikernel<UnikernelConfig>[];
  readonly policies: readonly StatePolicy[];
}

export type { Label, Name, Path, Policy };
