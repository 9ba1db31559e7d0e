// The remote transport of `petrel` (semantics §15, §16.1 remote mode): every command is signed
// into a fresh leaf certificate by the delegated CA, presented over mutual TLS 1.3 with the
// delegation chain, the server authenticated against the CA, then the reply read as on the
// local sockets.
//
// 1. The CA, the delegated chain and its key are read once per transport, on first use.
// 2. Names are relative to the delegation: the endpoint puts the chain's path before every
//    name, so for alice's CA `alice:vm` and `vm` are the same; a name elsewhere is refused here.
// 3. Our chain is checked against the CA with the endpoint's own verifier before the first
//    connection (a probe leaf on the delegated chain), and the chain's validity before each, so
//    a chain the server would drop without a word is reported here with its reason.
// 4. A create's image travels as raw chunks after the handshake (§14.3 step 1), never in the
//    leaf. The endpoint accepts leaves up to TLS's limit (a Certificate message below 16 MiB,
//    tls/sslctx.ts) for the stock clients that embed it, but streaming takes images up to
//    maxFrameBytes and neither side holds one inside a certificate.
// 5. The endpoint refuses without any reply frame (§14.1): a close before the first answer is
//    reported as an authentication failure whose reason is in the server's log.

import { webcrypto } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { connect, type TLSSocket } from 'node:tls';
import { ok, type Result } from '../resources/errors.js';
import { type Name, type Path, pathName, printName, printPath, relativeTo } from '../resources/name.js';
import type {
  Answer,
  Stream,
  TransferMeter,
  Transport,
  TransportError,
  TransportErrorCode,
} from '../wire/exchange.js';
import { DEFAULT_MAX_FRAME } from '../wire/index.js';
import type { Command } from '../wire/types.js';
import { checkValidity, decodeDer, encodePem } from './certs.js';
import { loadTrustAnchor, verifyClientChain } from './chain.js';
import { SocketChannel } from './channel.js';
import { describeError } from './errors.js';
import { firstAnswer, openStream, sendChunks, streamEvents } from './exchange.js';
import { delegationOf } from './identity.js';
import { exportPrivateKey, generateKey, importPrivateKey, type KeyPair, type KeyType } from './keys.js';
import { type Issuer, issueCommandLeaf } from './pki.js';
import { replyMode } from './proxy.js';
import { x509 } from './x509.js';

export interface RemoteTransportOptions {
  readonly host: string;
  readonly port: number;
  /** The CA the server's certificate must lead to, and our chain too: a PEM file's path, or its bytes. */
  readonly ca: string | Uint8Array;
  /** The delegated CA certificate, then the chain above it (`petrel ca delegate`'s PATH.pem): path or bytes. */
  readonly cert: string | Uint8Array;
  /** Its private key (PEM): path or bytes. Signs every leaf; never sent. */
  readonly key: string | Uint8Array;
  /** Key type of each leaf. Default ed25519. */
  readonly keyType?: KeyType;
  /** TCP connect plus TLS handshake. Default 10 s. */
  readonly connectTimeoutMs?: number;
  /** Largest frame accepted from the server. Default 64 MiB. */
  readonly maxFrameBytes?: number;
  /** Size of the raw chunks a create's image is streamed in. Default 64 KiB. */
  readonly chunkBytes?: number;
  /** The clock the leaf's validity starts from. Default: the system clock. */
  readonly clock?: () => Date;
  /** Hears of the bytes each session moves after the handshake (petrel's progress display). */
  readonly meter?: TransferMeter;
}

interface Material {
  readonly anchorPem: string;
  readonly issuer: Issuer;
  /** The key of every leaf of this transport (made at load, never written anywhere), as PEM too. */
  readonly leafKey: KeyPair;
  readonly leafKeyPem: string;
  /** The PEM of the certificates presented after the leaf. */
  readonly chainPem: string;
  /** The path the delegation chain spells, which the endpoint puts before every name. */
  readonly path: Path;
}

type Failed = { readonly ok: false; readonly error: TransportError };
const fail = (code: TransportErrorCode, message: string): Failed => ({ ok: false, error: { code, message } });

/** The endpoint's final Failure when petreld closed a subscription (§14.3 step 6). */
const SUBSCRIPTION_CLOSED = 'exception while reading from fd';
export function createRemoteTransport(options: RemoteTransportOptions): Transport {
  let material: Promise<Result<Material, TransportError>> | null = null;
  const where = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`;

  async function open(name: Name, command: Command) {
    material ??= loadMaterial(options);
    const loaded = await material;
    if (!loaded.ok) return loaded;
    const { issuer, path, anchorPem, leafKey, leafKeyPem, chainPem } = loaded.value;
    const relative = relativeName(name, path);
    if (!relative.ok) return relative;
    const { leafCommand, image } = splitImage(command);
    const now = (options.clock ?? (() => new Date()))();
    for (const cert of issuer.chain) {
      const valid = checkValidity(cert, now);
      if (!valid.ok) return fail('E_CLIENT_AUTH', `${NOT_VALID}: ${valid.error.message}`);
    }
    const leaf = await issueCommandLeaf(issuer, leafCommand, relative.value, { key: leafKey, now });
    if (!leaf.ok) return fail('E_CLIENT_UNSUPPORTED', leaf.error.message);
    const socket = await handshake(options, where, {
      ca: anchorPem,
      cert: `${encodePem(leaf.value.der)}\n${chainPem}`,
      key: leafKeyPem,
    });
    if (!socket.ok) return socket;
    return ok(new Session(socket.value, where, options, command, image));
  }

  return {
    async request(name, command, input) {
      const opened = await open(name, command);
      if (!opened.ok) return opened;
      const session = opened.value;
      let complete = true;
      try {
        const answer = session.firstAnswer();
        complete = await session.sendImage(answer);
        if (complete && input !== undefined) complete = await sendChunks(session.channel, input, answer);
        return await answer;
      } finally {
        if (complete) session.channel.end();
        else session.channel.destroy();
      }
    },

    async stream(name, command) {
      const opened = await open(name, command);
      if (!opened.ok) return opened;
      const session = opened.value;
      const answer = await session.firstAnswer();
      if (!answer.ok) {
        session.channel.destroy();
        return answer;
      }
      return ok(session.asStream(answer.value));
    },
  };
}

/** One TLS connection carrying one command. */
class Session {
  readonly channel: SocketChannel;
  readonly #where: string;
  readonly #options: RemoteTransportOptions;
  readonly #command: Command;
  readonly #image: Uint8Array | null;
  #lastError: Error | null = null;

  constructor(
    socket: TLSSocket,
    where: string,
    options: RemoteTransportOptions,
    command: Command,
    image: Uint8Array | null,
  ) {
    socket.on('error', (e: Error) => {
      this.#lastError = e;
    });
    this.channel = new SocketChannel(
      socket,
      options.maxFrameBytes ?? DEFAULT_MAX_FRAME,
      undefined,
      options.meter,
    );
    this.#where = where;
    this.#options = options;
    this.#command = command;
    this.#image = image;
  }

  /** The image of a create as raw chunks and the zero chunk, until the server has answered. */
  sendImage(answered: Promise<unknown>): Promise<boolean> {
    const image = this.#image;
    if (image === null) return Promise.resolve(true);
    const size = this.#options.chunkBytes ?? 64 * 1024;
    async function* chunks() {
      for (let at = 0; at < (image as Uint8Array).length; at += size)
        yield (image as Uint8Array).subarray(at, at + size);
    }
    return sendChunks(this.channel, chunks(), answered);
  }

  firstAnswer(): Promise<Result<Answer, TransportError>> {
    return firstAnswer(this.channel, this.#where, () => this.#closedWithoutReply());
  }

  asStream(answer: Answer): Stream {
    // Locally a subscription just ends when petreld closes it; the endpoint says so with a final
    // Failure. Both end the same way here.
    const subscription = replyMode(this.#command) === 'read';
    const events = streamEvents(this.channel, this.#where, (m) => subscription && m === SUBSCRIPTION_CLOSED);
    return openStream(this.channel, answer, events);
  }

  #closedWithoutReply(): TransportError {
    const e = this.#lastError;
    if (e !== null && isAlert(e)) {
      return { code: 'E_CLIENT_AUTH', message: `${this.#where} refused our certificate: ${e.message}` };
    }
    return {
      code: 'E_CLIENT_AUTH',
      message: `${this.#where} closed the connection without a reply: it refused the certificate chain or the request (its log says why)`,
    };
  }
}

const NOT_VALID = 'our certificate chain does not validate against the CA';

/**
 * Reads the three inputs and checks that they fit together, and that a leaf signed with them
 * validates against the CA as the endpoint will check it; any problem is an E_CLIENT_AUTH.
 */
async function loadMaterial(options: RemoteTransportOptions): Promise<Result<Material, TransportError>> {
  const read = async (input: string | Uint8Array, flag: string) => {
    if (typeof input !== 'string') return ok(input);
    try {
      return ok(new Uint8Array(await readFile(input)));
    } catch (e) {
      return fail('E_CLIENT_AUTH', `cannot read --${flag} ${input}: ${describeError(e)}`);
    }
  };
  const [caBytes, certBytes, keyBytes] = await Promise.all([
    read(options.ca, 'ca'),
    read(options.cert, 'cert'),
    read(options.key, 'key'),
  ]);
  if (!caBytes.ok) return caBytes;
  if (!certBytes.ok) return certBytes;
  if (!keyBytes.ok) return keyBytes;
  const anchor = loadTrustAnchor(caBytes.value);
  if (!anchor.ok) return fail('E_CLIENT_AUTH', `--ca: ${anchor.error.message}`);
  let chain: x509.X509Certificate[];
  try {
    chain = decodeDer(certBytes.value).map((der) => new x509.X509Certificate(der));
  } catch (e) {
    return fail('E_CLIENT_AUTH', `--cert does not hold certificates: ${describeError(e)}`);
  }
  const signer = chain[0];
  if (signer === undefined) return fail('E_CLIENT_AUTH', '--cert holds no certificate');
  const key = await importPrivateKey(keyBytes.value);
  if (!key.ok) return fail('E_CLIENT_AUTH', `--key: ${key.error.message}`);
  const spki = new Uint8Array(await webcrypto.subtle.exportKey('spki', key.value.publicKey));
  if (!Buffer.from(spki).equals(Buffer.from(signer.publicKey.rawData))) {
    return fail('E_CLIENT_AUTH', `--key is not the key of the --cert certificate ${signer.subject}`);
  }
  const delegation = delegationOf(
    chain.map((cert) => ({ der: new Uint8Array(cert.rawData), commonName: cn(cert) })),
  );
  if (!delegation.ok) return fail('E_CLIENT_AUTH', `--cert: ${delegation.error.message}`);
  const issuer: Issuer = { chain, key: key.value };
  const now = (options.clock ?? (() => new Date()))();
  const leafKey = await generateKey(options.keyType ?? 'ed25519');
  const probe = await issueCommandLeaf(issuer, PROBE, ROOT_NAME, { key: leafKey, now });
  if (!probe.ok) return fail('E_CLIENT_AUTH', `--cert: ${probe.error.message}`);
  const presented = [probe.value.der, ...probe.value.above.map((cert) => new Uint8Array(cert.rawData))];
  const checked = verifyClientChain(presented, anchor.value, now);
  if (!checked.ok) return fail('E_CLIENT_AUTH', `${NOT_VALID}: ${checked.error.message}`);
  return ok({
    anchorPem: encodePem(anchor.value.der),
    issuer,
    leafKey,
    leafKeyPem: await exportPrivateKey(leafKey),
    chainPem: probe.value.above.map((cert) => cert.toString('pem')).join('\n'),
    path: delegation.value.path,
  });
}

const PROBE: Command = { type: 'unikernel-info', release: '2.7' };
const ROOT_NAME = pathName([]);

const cn = (cert: x509.X509Certificate): string | null => cert.subjectName.getField('CN')[0] ?? null;

/** The name as the leaf carries it: relative to the delegation's path (see 2. above). */
function relativeName(name: Name, path: Path): Result<Name, TransportError> {
  if (name.path.length === 0) return ok(name);
  const relative = relativeTo(path, name);
  if (relative !== null && relative.path.length === 0) return ok(relative);
  const mine = path.length === 0 ? 'the root' : `${printPath(path)}:`;
  return fail(
    'E_CLIENT_UNSUPPORTED',
    `non-empty path: ${printName(name)} is not directly under ${mine}, where this certificate's delegation puts every name (a deeper path needs its own delegation)`,
  );
}

/** A create goes out with an empty image in the leaf; the image itself is streamed after it. */
function splitImage(command: Command): { leafCommand: Command; image: Uint8Array | null } {
  if (command.type !== 'unikernel-create') return { leafCommand: command, image: null };
  const leafCommand = { ...command, config: { ...command.config, image: new Uint8Array() } } as Command;
  return { leafCommand, image: command.config.image };
}

interface Credentials {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

function handshake(
  options: RemoteTransportOptions,
  where: string,
  credentials: Credentials,
): Promise<Result<TLSSocket, TransportError>> {
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  return new Promise((resolve) => {
    const socket = connect({
      host: options.host,
      port: options.port,
      ...credentials,
      minVersion: 'TLSv1.3',
      maxVersion: 'TLSv1.3',
      // As Albatross' client: the server is authenticated by the CA alone, not by host name.
      checkServerIdentity: () => undefined,
    });
    const done = (result: Result<TLSSocket, TransportError>): void => {
      clearTimeout(timer);
      socket.off('error', failed);
      socket.off('close', closed);
      if (!result.ok) socket.destroy();
      resolve(result);
    };
    const failed = (e: Error): void => done({ ok: false, error: classify(e, where) });
    const closed = (): void =>
      done(fail('E_CLIENT_CONNECT', `${where} closed the connection during the TLS handshake`));
    const timer = setTimeout(
      () => done(fail('E_CLIENT_CONNECT', `no TLS handshake with ${where} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.once('error', failed);
    socket.once('close', closed);
    socket.once('secureConnect', () => done(ok(socket)));
  });
}

const errorCode = (e: Error): string => String((e as NodeJS.ErrnoException).code ?? '');

/** A TLS alert from the server: it refused our certificate (or the handshake). */
const isAlert = (e: Error): boolean => /^ERR_SSL_.*ALERT/.test(errorCode(e));

/** Network trouble is a connect failure; certificate verdicts either way are authentication. */
function classify(e: Error, where: string): TransportError {
  const code = errorCode(e);
  if (isAlert(e)) return { code: 'E_CLIENT_AUTH', message: `${where} refused our certificate: ${e.message}` };
  // errno names (ECONNREFUSED, ENOTFOUND, ETIMEDOUT, ...): nothing to talk TLS with.
  if (/^E[A-Z]+$/.test(code))
    return { code: 'E_CLIENT_CONNECT', message: `cannot connect to ${where}: ${e.message}` };
  // Other TLS library errors: not a TLS 1.3 server, or a broken handshake.
  if (code.startsWith('ERR_'))
    return { code: 'E_CLIENT_PROTOCOL', message: `TLS with ${where} failed: ${e.message}` };
  // OpenSSL's certificate verification codes (CERT_HAS_EXPIRED, UNABLE_TO_VERIFY_LEAF_SIGNATURE, ...).
  return {
    code: 'E_CLIENT_AUTH',
    message: `the certificate of ${where} does not validate against the CA: ${e.message}`,
  };
}
