// native/build/sslctx.node and its build check: the check passes on this node, fails with its
// reason when a node hands out no SSL_CTX handle, and the endpoint refuses to start without it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { MAX_CERTIFICATE_LIST, prepareServerContext } from '../../src/tls/sslctx.js';
import { build, repo } from '../engine/guest.js';

const check = path.join(repo, 'native', 'sslctx', 'check.cjs');
const addon = path.join(build, 'sslctx.node');

describe('sslctx.node', () => {
  it('its build check passes on this node and fails, naming why, on one without the SSL_CTX handle', () => {
    const passed = spawnSync(process.execPath, [check, addon], { encoding: 'utf8' });
    expect(passed.stderr).toBe('');
    expect(passed.status).toBe(0);
    // A node whose SecureContext hands out no _external (a preload stands in for such a node).
    const dir = mkdtempSync(path.join(tmpdir(), 'petrel-sslctx-'));
    const preload = path.join(dir, 'no-handle.cjs');
    writeFileSync(
      preload,
      "const tls = require('node:tls'); const make = tls.createSecureContext;\n" +
        'tls.createSecureContext = (o) => { make(o); return { context: {} }; };\n',
    );
    const failed = spawnSync(process.execPath, ['-r', preload, check, addon], { encoding: 'utf8' });
    rmSync(dir, { recursive: true, force: true });
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('has no _external handle holding its SSL_CTX');
    expect(failed.stderr).toContain(`node ${process.version}; Petrel supports Node 20`);
  });

  it('prepares a real context, and refuses one without the handle with E_TLS_CERT_LIMIT', () => {
    expect(prepareServerContext(createSecureContext({}))).toEqual({ ok: true, value: undefined });
    const fake = { context: {} } as unknown as SecureContext;
    const refused = prepareServerContext(fake);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error.code).toBe('E_TLS_CERT_LIMIT');
    expect(!refused.ok && refused.error.message).toMatch(/exposes no SSL_CTX/);
    expect(MAX_CERTIFICATE_LIST).toBe(16 * 1024 * 1024);
  });
});
