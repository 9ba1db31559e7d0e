// The DER layer: a small strict reader and writer for exactly the subset the Albatross grammar uses.
// Hand-written rather than on asn1js: asn1js 4.0.0 decodes BER leniently (it accepts indefinite
// lengths, non-minimal INTEGERs and non-minimal lengths, and leaves trailing bytes to the caller),
// copies OCTET STRING contents, does not sort SET OF on encode and knows no 63-bit range, so each
// DER rule would have to be re-checked on top of it. Here each rule is one visible check where the
// bytes are read, OCTET STRINGs (images) are zero-copy views, and every error carries its offset.

export * from './reader.js';
export * from './tags.js';
export * from './writer.js';
