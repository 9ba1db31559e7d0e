// petreld's configuration: defaults, a TOML file, flags over the file, and validation errors that
// name the key path (file) or the flag (command line).

import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildConfig,
  CONFIG_FIELDS,
  type ConfigKey,
  configHelp,
  flagName,
  keyPath,
  loadConfig,
  type PetrelConfig,
  parseDuration,
  socketPaths,
} from '../../src/daemon/config.js';
import type { PetrelError, Result } from '../../src/resources/errors.js';
import { tempDirEachTest } from '../host/helpers.js';

function value(result: Result<PetrelConfig, PetrelError>): PetrelConfig {
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

function errors(result: Result<unknown, PetrelError>): readonly string[] {
  if (result.ok) throw new Error('expected a failure');
  expect(result.error.code).toBe('E_CONFIG');
  return result.error.details?.errors as string[];
}

let dir: string;
tempDirEachTest((made) => {
  dir = made;
});

describe('defaults', () => {
  it('are those of petrel-differences (h) and issue 8, durations in milliseconds', () => {
    const config = value(buildConfig());
    expect(config).toMatchObject({
      stateDir: '/var/lib/petrel',
      runDir: '/run/petrel',
      runtimes: ['hvt'],
      kvmDevice: '/dev/kvm',
      tenderHvt: null,
      tenderSpt: null,
      tapPrefix: 'ptap',
      bridges: [],
      metricsListen: null,
      tlsListen: null,
      logLevel: 'info',
      logFormat: 'auto',
      stopTimeout: 10_000,
      stopGuestsOnExit: false,
      consoleBuffer: 65_536,
      maxSubscriberQueue: 1024,
      maxFrameBytes: 67_108_864,
      maxPendingConnections: 1024,
      maxPendingPerAddress: 64,
      maxPendingBytes: 67_108_864,
      maxPendingBytesPerAddress: 33_554_432,
      firstByteTimeout: 5_000,
      clientHelloTimeout: 10_000,
      minHandshakeRate: 4096,
      handshakeStallTimeout: 10_000,
      maxConnectionsPerIdentity: 64,
      frameStallTimeout: 30_000,
      maxLocalConnections: 8192,
      localIdleTimeout: 60_000,
      restartBackoffBase: 1_000,
      restartBackoffMax: 60_000,
      restartStableAfter: 60_000,
      restartMaxCount: 10,
      restartWindow: 600_000,
      maxSubscribers: 5,
      statsInterval: 10_000,
      fleetDb: null,
      nodeId: os.hostname(),
    });
  });

  it('is frozen, lists included', () => {
    const config = value(buildConfig());
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.runtimes)).toBe(true);
    expect(Object.isFrozen(config.bridges)).toBe(true);
  });

  it('sockets live under <run-dir>/util', () => {
    expect(socketPaths('/run/petrel')).toEqual([
      '/run/petrel/util/vmmd.sock',
      '/run/petrel/util/console.sock',
      '/run/petrel/util/stat.sock',
    ]);
  });
});

describe('file and flags', () => {
  it('flags override the file, which overrides the defaults; relative paths follow their source', async () => {
    const file = path.join(dir, 'petreld.toml');
    await writeFile(
      file,
      `stateDir = "state"
runDir = "/file/run"
runtimes = ["hvt", "spt"]
bridges = ["br0", "br1"]

[limits]
maxFrameBytes = 1048576
stopTimeout = "2m"

[restart]
restartMaxCount = 3

[tls]
tlsListen = "[::1]:1025"
tlsCa = "ca.pem"
tlsCert = "cert.pem"
tlsKey = "key.pem"
`,
    );
    const loaded = await loadConfig(
      [
        '--config',
        'petreld.toml',
        '--run-dir',
        'run',
        '--max-frame-bytes=2048',
        '--runtimes',
        'none',
        'check',
      ],
      { cwd: dir },
    );
    if (!loaded.ok) throw new Error(loaded.error.message);
    const { config, positionals, help, file: read } = loaded.value;
    expect(read).toBe(file);
    expect(positionals).toEqual(['check']);
    expect(help).toBe(false);
    expect(config.stateDir).toBe(path.join(dir, 'state'));
    expect(config.runDir).toBe(path.join(dir, 'run'));
    expect(config.maxFrameBytes).toBe(2048);
    expect(config.stopTimeout).toBe(120_000);
    expect(config.restartMaxCount).toBe(3);
    expect(config.runtimes).toEqual([]);
    expect(config.bridges).toEqual(['br0', 'br1']);
    expect(config.tlsListen).toEqual({ host: '::1', port: 1025 });
    expect(config.tlsCa).toBe(path.join(dir, 'ca.pem'));
    expect(config.maxPendingConnections).toBe(1024);
  });

  it('an empty flag unsets what the file set', async () => {
    await writeFile(path.join(dir, 'c.toml'), '[fleet]\nfleetDb = "postgres://db/petrel"\n');
    const loaded = await loadConfig(['--config', 'c.toml', '--fleet-db', ''], { cwd: dir });
    expect(loaded.ok && loaded.value.config.fleetDb).toBeNull();
  });

  it('jails by default; --no-jail (or jail = false in the file) does not; --no-jail with --jail is an error', async () => {
    const plain = await loadConfig([], { cwd: dir });
    expect(plain.ok && [plain.value.config.jail, plain.value.config.jailIds]).toEqual([
      true,
      { first: 65_536, last: 99_999 },
    ]);
    const off = await loadConfig(['--no-jail'], { cwd: dir });
    expect(off.ok && off.value.config.jail).toBe(false);
    await writeFile(path.join(dir, 'j.toml'), 'jail = false\njailIds = "70000-70999"\n');
    const file = await loadConfig(['--config', 'j.toml'], { cwd: dir });
    expect(file.ok && [file.value.config.jail, file.value.config.jailIds]).toEqual([
      false,
      { first: 70_000, last: 70_999 },
    ]);
    const both = await loadConfig(['--no-jail', '--jail', 'true'], { cwd: dir });
    expect(!both.ok && both.error).toMatchObject({
      code: 'E_CONFIG',
      message: '--no-jail and --jail: give one of them',
    });
    const nobody = await loadConfig(['--jail-ids', '65000-66000'], { cwd: dir });
    expect(!nobody.ok && nobody.error.message).toContain('--jail-ids: the range must not hold 65534');
  });

  it('reads JSON when the file is named *.json', async () => {
    await writeFile(
      path.join(dir, 'c.json'),
      JSON.stringify({ tapPrefix: 'vm', limits: { maxSubscribers: 7 } }),
    );
    const loaded = await loadConfig(['--config', 'c.json'], { cwd: dir });
    expect(loaded.ok && [loaded.value.config.tapPrefix, loaded.value.config.maxSubscribers]).toEqual([
      'vm',
      7,
    ]);
  });

  it('--help and -h are reported, not acted on', async () => {
    for (const flag of ['--help', '-h']) {
      const loaded = await loadConfig([flag], { cwd: dir });
      expect(loaded.ok && loaded.value.help).toBe(true);
    }
  });

  it('a file that cannot be read or parsed names the file', async () => {
    const missing = await loadConfig(['--config', 'nope.toml'], { cwd: dir });
    expect(!missing.ok && missing.error.message).toBe(`--config: cannot read ${dir}/nope.toml: ENOENT`);
    await writeFile(path.join(dir, 'bad.toml'), 'runDir = \n');
    const bad = await loadConfig(['--config', 'bad.toml'], { cwd: dir });
    expect(!bad.ok && bad.error.message.startsWith(`${dir}/bad.toml: `)).toBe(true);
  });
});

describe('validation', () => {
  it('a key of an earlier release is refused with what replaced it', () => {
    const result = buildConfig({
      document: { limits: { maxPendingHandshakes: 64, handshakeTimeout: '10s' } },
    });
    expect(errors(result)).toEqual([
      'limits.maxPendingHandshakes: no longer a key: replaced by maxPendingConnections and maxPendingPerAddress (docs/operations.md)',
      'limits.handshakeTimeout: no longer a key: replaced by firstByteTimeout, clientHelloTimeout, minHandshakeRate and handshakeStallTimeout (docs/operations.md)',
    ]);
  });

  it('names the key path of every bad value in the file, all at once', () => {
    const result = buildConfig({
      document: {
        runDir: '',
        runtimes: ['kvm'],
        tapPrefix: 'ptap1',
        limits: { maxFrameBytes: -1, handshakeStallTimeout: '10 parsecs', maxSubscribers: 1.5 },
        restart: { restartWindow: 0 },
        fleet: { nodeAddress: 'host:99999' },
        logLevel: 'loud',
      },
    });
    expect(errors(result)).toEqual([
      'runDir: expected a non-empty path',
      'runtimes: expected "auto", "none" or a list of runtimes from hvt, spt, got "kvm"',
      'tapPrefix: invalid tap prefix "ptap1": 1 to 14 bytes, not ending in a digit',
      'limits.maxFrameBytes: expected a positive integer',
      'limits.handshakeStallTimeout: expected a positive duration such as 10s, 500ms, 2m or a number of seconds',
      'limits.maxSubscribers: expected a positive integer',
      'restart.restartWindow: expected a positive duration such as 10s, 500ms, 2m or a number of seconds',
      'fleet.nodeAddress: expected HOST:PORT, [IPv6]:PORT or a port number',
      'logLevel: expected one of fatal, error, warn, info, debug, trace, silent',
    ]);
    expect(!result.ok && result.error.message.split('\n')[0]).toBe('invalid configuration:');
  });

  it('every key: a wrong type in the file names its key path, a bad flag names the flag', () => {
    for (const key of Object.keys(CONFIG_FIELDS) as ConfigKey[]) {
      const table = CONFIG_FIELDS[key].table;
      const document = table === null ? { [key]: { wrong: true } } : { [table]: { [key]: { wrong: true } } };
      const fromFile = errors(buildConfig({ document }));
      expect(fromFile).toHaveLength(1);
      expect(fromFile[0]?.startsWith(`${keyPath(key)}: `)).toBe(true);
      const fromFlag = errors(buildConfig({ flags: { [key]: '\0' } }));
      expect(fromFlag[0]?.startsWith(`--${flagName(key)}: `)).toBe(true);
    }
  });

  it('rejects unknown keys, keys outside their table and tables that are not tables', () => {
    expect(
      errors(
        buildConfig({
          document: { colour: 'blue', maxFrameBytes: 1, limits: { stateDir: '/x', nope: 1 }, fleet: 3 },
        }),
      ),
    ).toEqual([
      'colour: unknown key',
      'maxFrameBytes: unknown key (did you mean limits.maxFrameBytes?)',
      'limits.stateDir: unknown key (did you mean stateDir?)',
      'limits.nope: unknown key',
      'fleet: expected a table',
    ]);
  });

  it('rejects unknown flags', async () => {
    const loaded = await loadConfig(['--max-frames', '1'], { cwd: dir });
    expect(!loaded.ok && loaded.error.message).toMatch(/Unknown option '--max-frames'/u);
  });

  it('checks keys that depend on each other after merging', () => {
    expect(errors(buildConfig({ flags: { tlsListen: '1025', tlsCa: '/ca.pem' } }))).toEqual([
      'tls.tlsCert: required when tls.tlsListen is set',
      'tls.tlsKey: required when tls.tlsListen is set',
    ]);
    expect(errors(buildConfig({ document: { restart: { restartBackoffBase: '2m' } } }))).toEqual([
      'restart.restartBackoffMax: must not be less than restart.restartBackoffBase',
    ]);
    expect(errors(buildConfig({ flags: { fleetHeartbeat: '30s' } }))).toEqual([
      'fleet.fleetFresh: must be longer than fleet.fleetHeartbeat',
    ]);
  });

  it('runtimes: none or auto alone, or hvt and spt; listen addresses with a default host', () => {
    expect(value(buildConfig({ flags: { runtimes: 'spt,hvt,hvt' } })).runtimes).toEqual(['hvt', 'spt']);
    expect(value(buildConfig({ document: { runtimes: 'none' } })).runtimes).toEqual([]);
    expect(value(buildConfig({ document: { runtimes: 'auto' } })).runtimes).toBe('auto');
    expect(value(buildConfig({ flags: { runtimes: 'auto' } })).runtimes).toBe('auto');
    expect(errors(buildConfig({ flags: { runtimes: 'auto,spt' } }))[0]).toMatch(/^--runtimes: .*got "auto"/u);
    expect(errors(buildConfig({ flags: { runtimes: '' } }))[0]).toMatch(
      /^--runtimes: expected "auto", "none"/u,
    );
    expect(errors(buildConfig({ flags: { runtimes: 'none,hvt' } }))[0]).toMatch(/^--runtimes: /u);
    expect(value(buildConfig({ flags: { metricsListen: '9464' } })).metricsListen).toEqual({
      host: '127.0.0.1',
      port: 9464,
    });
    expect(
      value(buildConfig({ document: { tls: { tlsListen: 1025, tlsCa: 'a', tlsCert: 'b', tlsKey: 'c' } } }))
        .tlsListen,
    ).toEqual({
      host: '::',
      port: 1025,
    });
  });
});

describe('shutdown mode and console buffer', () => {
  it('stopGuestsOnExit takes a TOML boolean or true/false as a flag; consoleBuffer bytes', () => {
    expect(value(buildConfig({ document: { stopGuestsOnExit: true } })).stopGuestsOnExit).toBe(true);
    expect(value(buildConfig({ flags: { stopGuestsOnExit: 'true' } })).stopGuestsOnExit).toBe(true);
    expect(
      value(buildConfig({ document: { stopGuestsOnExit: true }, flags: { stopGuestsOnExit: 'false' } }))
        .stopGuestsOnExit,
    ).toBe(false);
    expect(errors(buildConfig({ flags: { stopGuestsOnExit: 'yes' } }))).toEqual([
      '--stop-guests-on-exit: expected true or false',
    ]);
    expect(errors(buildConfig({ document: { stopGuestsOnExit: 'true' } }))).toEqual([
      'stopGuestsOnExit: expected true or false',
    ]);
    expect(value(buildConfig({ document: { limits: { consoleBuffer: 4096 } } })).consoleBuffer).toBe(4096);
    expect(errors(buildConfig({ flags: { consoleBuffer: '100' } }))).toEqual([
      '--console-buffer: expected an integer from 1024 to 16777216',
    ]);
  });
});

describe('durations', () => {
  it('accept 10s, 500ms, 2m, 1h and numbers of seconds', () => {
    const cases: [unknown, number][] = [
      ['10s', 10_000],
      ['500ms', 500],
      ['2m', 120_000],
      ['1h', 3_600_000],
      ['1.5s', 1_500],
      ['7', 7_000],
      [5, 5_000],
      [0.25, 250],
    ];
    for (const [raw, ms] of cases) expect(parseDuration(raw)).toEqual({ ok: true, value: ms });
  });

  it('refuse zero, negatives, unknown units and anything a timer cannot hold', () => {
    for (const raw of ['0s', 0, -1, '-1s', '10x', '1d', '', 's', true, [1], '30d']) {
      expect(parseDuration(raw).ok).toBe(false);
    }
  });

  it('the same spellings work in the file and in flags', () => {
    const fromFlag = value(buildConfig({ flags: { stopTimeout: '500ms', restartWindow: '2m' } }));
    const fromFile = value(
      buildConfig({ document: { limits: { stopTimeout: 0.5 }, restart: { restartWindow: '2m' } } }),
    );
    expect([fromFlag.stopTimeout, fromFlag.restartWindow]).toEqual([500, 120_000]);
    expect([fromFile.stopTimeout, fromFile.restartWindow]).toEqual([500, 120_000]);
  });
});

describe('help', () => {
  it('lists every flag with its file key and default', () => {
    const help = configHelp();
    for (const flag of [
      'config',
      'state-dir',
      'run-dir',
      'tls-listen',
      'tls-ca',
      'tls-cert',
      'tls-key',
      'tender-hvt',
      'tender-spt',
      'kvm-device',
      'runtimes',
      'tap-prefix',
      'metrics-listen',
      'stop-timeout',
      'stop-guests-on-exit',
      'console-buffer',
      'max-subscriber-queue',
      'max-frame-bytes',
      'max-pending-connections',
      'max-pending-per-address',
      'max-pending-bytes',
      'max-pending-bytes-per-address',
      'first-byte-timeout',
      'client-hello-timeout',
      'min-handshake-rate',
      'handshake-stall-timeout',
      'max-connections-per-identity',
      'frame-stall-timeout',
      'max-local-connections',
      'local-idle-timeout',
      'restart-backoff-base',
      'restart-backoff-max',
      'restart-stable-after',
      'restart-max-count',
      'restart-window',
      'max-subscribers',
      'stats-interval',
      'canary-deadline',
      'fleet-db',
      'node-id',
      'node-address',
      'fleet-heartbeat',
      'fleet-fresh',
      'offer-memory',
      'log-level',
      'log-format',
    ]) {
      expect(help).toContain(`  --${flag} `);
    }
    expect(help).toContain('--max-frame-bytes N    [limits.maxFrameBytes, default 67108864]');
  });
});
