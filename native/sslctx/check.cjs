// Build check for sslctx.node (native/Makefile runs it): the node that built it must hand out
// a SecureContext's SSL_CTX as `_external`, and the addon's settings must take (read back where
// OpenSSL can say). Exits 1 with the reason otherwise, so a Node without the handle fails the
// build, not a handshake.
const { createSecureContext } = require('node:tls');
const { isExternal } = require('node:util').types;

const file = process.argv[2];
const failed = (why) => {
  console.error(`${file}: ${why} (node ${process.version}; Petrel supports Node 20)`);
  process.exit(1);
};
const handle = createSecureContext({}).context?._external;
if (!isExternal(handle)) failed("this node's SecureContext has no _external handle holding its SSL_CTX");
let addon;
try {
  addon = require(file);
} catch (e) {
  failed(`cannot be loaded: ${e.message}`);
}
const wanted = 16 * 1024 * 1024;
const now = addon.setMaxCertList(handle, wanted);
if (now !== wanted) failed(`SSL_CTX_ctrl left the certificate-list limit at ${now}, not ${wanted}`);
if (typeof addon.skipChainVerification !== 'function') failed('has no skipChainVerification');
addon.skipChainVerification(handle);
if (typeof addon.noTickets !== 'function') failed('has no noTickets');
const tickets = addon.noTickets(handle);
if (tickets !== 0) failed(`OpenSSL still sends ${tickets} session tickets`);
