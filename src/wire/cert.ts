// The X.509 extension that carries a command (albatross-wire.md §4.13): OID 1.3.6.1.4.1.49836.42,
// extnValue = DER of SEQUENCE { version INTEGER (5), command Command }; and finding it in a certificate.

import { encCommand, readCommand } from './command.js';
import { compareBytes, enc, Reader, TAG, toBytes } from './der.js';
import { fault, guard, shiftError, type WireResult } from './errors.js';
import { decodeWhole, plain, readVersion } from './message.js';
import { type Command, WIRE_VERSION } from './types.js';

export const ALBATROSS_OID = '1.3.6.1.4.1.49836.42';
/** The content bytes of the OID (after `06 09`). */
const ALBATROSS_OID_BYTES = Uint8Array.of(0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0x85, 0x2c, 0x2a);

/** Decodes the extnValue content: the command inside a certificate. */
export function decodeCertExtension(value: Uint8Array): WireResult<Command> {
  return decodeWhole(value, (r) =>
    r.sequence((s) => {
      readVersion(s);
      return readCommand(s);
    }, 'certificate extension'),
  );
}

export function encodeCertExtension(command: Command): WireResult<Uint8Array> {
  return guard(() => toBytes(enc.sequence([enc.integer(WIRE_VERSION), encCommand(command)])));
}

export interface CertExtension {
  /** Albatross never marks it critical; a critical one makes the chain unusable for verifiers. */
  readonly critical: boolean;
  /** The extnValue content (a view into the certificate). */
  readonly value: Uint8Array;
}

/**
 * Walks a DER certificate to its extensions and returns the Albatross one, or null when the
 * certificate has none. Only the structure is checked, not signatures or validity.
 */
export function findCertExtension(certificate: Uint8Array): WireResult<CertExtension | null> {
  return guard(() => {
    const r = new Reader(plain(certificate));
    const cert = r.enter(TAG.SEQUENCE, 'Certificate');
    r.done();
    const tbs = cert.enter(TAG.SEQUENCE, 'TBSCertificate');
    while (!tbs.atEnd()) {
      if (tbs.next() !== 0xa3) continue;
      const wrapper = tbs.content();
      const extensions = wrapper.enter(TAG.SEQUENCE, 'Extensions');
      wrapper.done();
      let found: CertExtension | null = null;
      while (!extensions.atEnd()) {
        const ext = extensions.enter(TAG.SEQUENCE, 'Extension');
        const at = ext.offset;
        const oid = ext.oid();
        const critical = ext.peek() === TAG.BOOLEAN ? ext.boolean('critical') : false;
        const value = ext.octets('extnValue');
        ext.done();
        if (compareBytes(oid, ALBATROSS_OID_BYTES) !== 0) continue;
        if (found !== null) fault('E_WIRE_CERT', 'the Albatross extension appears twice', at);
        found = { critical, value };
      }
      return found;
    }
    return null;
  });
}

/**
 * The command a certificate carries and whether its extension is marked critical, or null when
 * it has no Albatross extension. Error offsets are positions within the certificate.
 */
export function certificateCommand(
  certificate: Uint8Array,
): WireResult<{ readonly critical: boolean; readonly command: Command } | null> {
  const ext = findCertExtension(certificate);
  if (!ext.ok || ext.value === null) return ext as WireResult<null>;
  const command = decodeCertExtension(ext.value.value);
  if (!command.ok) {
    const shift = ext.value.value.byteOffset - certificate.byteOffset;
    return { ok: false, error: shiftError(command.error, shift) };
  }
  return { ok: true, value: { critical: ext.value.critical, command: command.value } };
}

/** The command a certificate carries, or null when it has no Albatross extension. */
export function commandFromCertificate(certificate: Uint8Array): WireResult<Command | null> {
  const found = certificateCommand(certificate);
  return found.ok ? { ok: true, value: found.value?.command ?? null } : found;
}
