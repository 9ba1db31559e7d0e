// Start-up adoption (Petrel (k)): which tenders the holder kept from an earlier petreld belong
// to committed unikernels and run on, which exited meanwhile (they get the restart decision they
// would have had), and which nothing committed refers to (stopped, their artefacts removed).
// Pure: the host lists the held tenders, the state says what is committed.

import { createHash } from 'node:crypto';
import { parseName, printName } from '../resources/name.js';
import { parseMac } from '../wire/mac.js';
import type { ImageRef, KeptConfig, UnikernelRecord } from '../wire/petrel-state.js';
import type { NetAttachment, VmName } from './types.js';

/** What petreld gives the holder to keep with a tender, so a later petreld can take it over. */
export interface TenderMeta {
  /** configFingerprint of the configuration the tender was started with. */
  readonly fingerprint: string;
  /** SHA-256 (hex) of the inflated image. */
  readonly digest: string;
  /** The image file (the link to the store) the tender was given, and its console FIFO. */
  readonly image: string;
  readonly fifo: string;
  readonly nets: readonly NetAttachment[];
  /** The jail id (uid and gid) it runs under; absent for a tender started unjailed. */
  readonly jail?: number;
}

/** A tender the holder lists, with whether the PID record of its name is this very process. */
export interface HeldTender {
  readonly pid: number;
  /** The unikernel's name string. */
  readonly tag: string;
  readonly meta: string;
  /** Null while it runs. */
  readonly exit: { readonly code: number | null; readonly signal: string | null } | null;
  readonly startedAt: Date;
  readonly exitedAt: Date | null;
  /**
   * What `<run-dir>/tenders/<name>` says: this very process (pid and start time), another live
   * process, or nothing alive (no record, or one of a process that is gone). The holder's word
   * that the process is its child is enough to adopt it; a record naming another live process
   * is not.
   */
  readonly record: 'this' | 'none' | 'other';
}

export interface Adoptable {
  readonly name: VmName;
  readonly config: KeptConfig;
  readonly image: ImageRef;
  readonly held: HeldTender;
  readonly meta: TenderMeta;
}

export interface AdoptionPlan {
  /** Committed and running: taken over as they are. */
  readonly adopt: readonly Adoptable[];
  /** Committed, exited while no petreld was attached: released, then the restart decision. */
  readonly exited: readonly Adoptable[];
  /** Nothing committed refers to them: stopped if running, forgotten, artefacts removed. */
  readonly dismiss: readonly { readonly held: HeldTender; readonly reason: string }[];
}

const VERSION = 1;

/** A JSON text with keys sorted at every level, bytes as their SHA-256, big integers as text. */
function canonical(value: unknown): string {
  if (value instanceof Uint8Array) return JSON.stringify(createHash('sha256').update(value).digest('hex'));
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * Identifies a configuration as committed (state) and as started (the holder's meta) alike:
 * everything in it, the image by its digest (which `canonical` gives a configuration holding
 * the bytes of an uncompressed image too).
 */
export function configFingerprint(config: KeptConfig, digest: string): string {
  return createHash('sha256')
    .update(canonical({ ...config, image: digest }))
    .digest('hex');
}

export function encodeMeta(meta: TenderMeta): string {
  return JSON.stringify({ v: VERSION, ...meta });
}

/** The meta of a held tender, or null when it is not one this version wrote. */
export function decodeMeta(text: string): TenderMeta | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object') return null;
  const m = parsed as Record<string, unknown>;
  const isString = (v: unknown): v is string => typeof v === 'string';
  const nets = m.nets;
  if (
    m.v !== VERSION ||
    !isString(m.fingerprint) ||
    !isString(m.digest) ||
    !isString(m.image) ||
    !isString(m.fifo) ||
    !Array.isArray(nets) ||
    !nets.every(
      (n: unknown) =>
        n !== null &&
        typeof n === 'object' &&
        ['netif', 'bridge', 'tap', 'mac'].every((k) => isString((n as Record<string, unknown>)[k])),
    )
  ) {
    return null;
  }
  const attachments: NetAttachment[] = [];
  for (const { netif, bridge, tap, mac } of nets as Record<'netif' | 'bridge' | 'tap' | 'mac', string>[]) {
    const parsed = parseMac(mac);
    if (!parsed.ok) return null;
    attachments.push({ netif, bridge, tap, mac: parsed.value });
  }
  const jail = m.jail;
  if (jail !== undefined && (typeof jail !== 'number' || !Number.isSafeInteger(jail) || jail <= 0))
    return null;
  return {
    fingerprint: m.fingerprint,
    digest: m.digest,
    image: m.image,
    fifo: m.fifo,
    nets: attachments,
    ...(jail === undefined ? {} : { jail }),
  };
}

/**
 * Matches held tenders to the committed unikernels. A running tender is adopted only when its
 * name is committed with the very configuration it was started with and no PID record names
 * another live process for that name; at most one per name. An exited one of a committed name and
 * configuration, when none of that name runs, gets its restart decision; the latest if several.
 */
export function planAdoption(stored: readonly UnikernelRecord[], held: readonly HeldTender[]): AdoptionPlan {
  type Committed = { name: VmName; config: KeptConfig; image: ImageRef; fingerprint: string };
  const committed = new Map<string, Committed>();
  for (const entry of stored) {
    if (entry.name.label === null) continue;
    const name = entry.name as VmName;
    committed.set(printName(name), {
      name,
      config: entry.config,
      image: entry.image,
      fingerprint: configFingerprint(entry.config, entry.image.digest),
    });
  }
  const adopt = new Map<string, Adoptable>();
  const exited = new Map<string, Adoptable>();
  const dismiss: { held: HeldTender; reason: string }[] = [];
  const candidates: { held: HeldTender; meta: TenderMeta; key: string }[] = [];
  for (const tender of held) {
    const meta = decodeMeta(tender.meta);
    const parsed = parseName(tender.tag);
    if (meta === null || !parsed.ok || parsed.value.label === null) {
      dismiss.push({ held: tender, reason: 'not a tender this petreld can take over' });
      continue;
    }
    const key = printName(parsed.value);
    const entry = committed.get(key);
    if (entry === undefined) {
      dismiss.push({ held: tender, reason: 'not in the state' });
    } else if (entry.fingerprint !== meta.fingerprint) {
      dismiss.push({ held: tender, reason: 'started with a configuration that was not committed' });
    } else {
      candidates.push({ held: tender, meta, key });
    }
  }
  for (const { held: tender, meta, key } of candidates) {
    if (tender.exit !== null || tender.record === 'other') continue;
    const entry = committed.get(key) as Committed;
    if (adopt.has(key)) dismiss.push({ held: tender, reason: 'another tender of this name runs' });
    else adopt.set(key, { name: entry.name, config: entry.config, image: entry.image, held: tender, meta });
  }
  for (const { held: tender, meta, key } of candidates) {
    if (tender.exit === null) {
      if (tender.record === 'other')
        dismiss.push({ held: tender, reason: 'its PID record names another process' });
      continue;
    }
    const entry = committed.get(key) as Committed;
    const earlier = exited.get(key);
    const later = (earlier?.held.exitedAt?.getTime() ?? -1) < (tender.exitedAt?.getTime() ?? 0);
    if (adopt.has(key) || (earlier !== undefined && !later)) {
      dismiss.push({ held: tender, reason: 'an exit already dealt with' });
      continue;
    }
    if (earlier !== undefined) dismiss.push({ held: earlier.held, reason: 'an exit already dealt with' });
    exited.set(key, { name: entry.name, config: entry.config, image: entry.image, held: tender, meta });
  }
  return { adopt: [...adopt.values()], exited: [...exited.values()], dismiss };
}
