// Where the endpoint finds petreld's sockets and its default limits: what `petreld tls-endpoint`'s
// flags need, in a module light enough to load before anyone knows whether TLS will run.

import { join } from 'node:path';
import { DEFAULT_MAX_FRAME } from '../wire/framing.js';

export interface SocketPaths {
  readonly vmmd: string;
  readonly console: string;
  readonly stats: string;
}

/** `<run-dir>/util/vmmd.sock`, `console.sock`, `stat.sock`, as Albatross names them. */
export function socketPaths(runDir: string): SocketPaths {
  const util = join(runDir, 'util');
  return {
    vmmd: join(util, 'vmmd.sock'),
    console: join(util, 'console.sock'),
    stats: join(util, 'stat.sock'),
  };
}

export const TLS_DEFAULTS = {
  host: '::',
  port: 1025,
  maxFrameBytes: DEFAULT_MAX_FRAME,
} as const;

/**
 * Admission of unauthenticated connections (petrel-differences.md (c); src/resources/admission.ts
 * says how each is used). The same keys, with these defaults, for every listener.
 */
export interface AdmissionSettings {
  /** Pending (not yet authenticated) connections in all, and from one address (IPv6: a /64). */
  readonly maxPendingConnections: number;
  readonly maxPendingPerAddress: number;
  /** Bytes read from pending connections beyond each one's first 16 KiB, in all and per address. */
  readonly maxPendingBytes: number;
  readonly maxPendingBytesPerAddress: number;
  readonly firstByteTimeoutMs: number;
  readonly clientHelloTimeoutMs: number;
  /** Bytes per second a handshake must keep up once past its first record. */
  readonly minHandshakeRate: number;
  /** The longest silence of a handshake past its first record. */
  readonly handshakeStallMs: number;
}

export const ADMISSION_DEFAULTS: AdmissionSettings = {
  maxPendingConnections: 1024,
  maxPendingPerAddress: 64,
  maxPendingBytes: 64 * 1024 * 1024,
  maxPendingBytesPerAddress: 32 * 1024 * 1024,
  firstByteTimeoutMs: 5_000,
  clientHelloTimeoutMs: 10_000,
  minHandshakeRate: 4096,
  handshakeStallMs: 10_000,
};

/** After the handshake. */
export const SESSION_DEFAULTS = {
  /** Concurrent sessions of one identity (the chain's path, e.g. `alice:`). */
  maxConnectionsPerIdentity: 64,
  /** A frame that has begun arriving must go on arriving: the longest pause inside one. */
  frameStallTimeoutMs: 30_000,
} as const;

/** A connection's first bytes never wait for a reservation: any ordinary handshake fits. */
export const SMALL_HANDSHAKE = 16 * 1024;
/**
 * The largest handshake: a Certificate message of up to 16 MiB (the certificate-list limit
 * petreld sets against floods) with its record overhead and the rest of the client's flight.
 */
export const LARGE_HANDSHAKE = 16 * 1024 * 1024 + 256 * 1024;

/** The table's limits for settings. */
export function admissionLimits(settings: AdmissionSettings, largeBytes = LARGE_HANDSHAKE) {
  return {
    maxPending: settings.maxPendingConnections,
    maxPendingPerAddress: settings.maxPendingPerAddress,
    maxPendingBytes: settings.maxPendingBytes,
    maxPendingBytesPerAddress: settings.maxPendingBytesPerAddress,
    smallBytes: SMALL_HANDSHAKE,
    largeBytes,
    firstByteMs: settings.firstByteTimeoutMs,
    helloMs: settings.clientHelloTimeoutMs,
    minRate: settings.minHandshakeRate,
    stallMs: settings.handshakeStallMs,
  };
}
