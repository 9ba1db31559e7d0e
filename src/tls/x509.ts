// @peculiar/x509 loaded the one way that works in Node: Reflect metadata first, then the library,
// with Node's WebCrypto as its provider. Every module of src/tls imports X.509 through here.

import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
