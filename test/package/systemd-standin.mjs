#!/usr/bin/env node
// TEST DOUBLE for `systemctl` and `deb-systemd-invoke`: CI has no systemd as PID 1, so the
// package test puts this first on PATH (as both names) for dpkg's maintainer scripts. It records
// every call in $PETREL_STANDIN_DIR/calls and does what the unit says: start runs ExecStartPre
// then ExecStart as written (detached, output appended to $PETREL_STANDIN_DIR/<unit>.log, the
// main pid in <unit>.pid), stop sends SIGTERM to the main pid alone (KillMode=process) and waits
// for it, restart is both; a call with --root= (unit files only) goes to the real systemctl.
// RuntimeDirectory= is not made: the test's configuration names its own run directory.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.PETREL_STANDIN_DIR;
if (dir === undefined) {
  process.stderr.write('systemd stand-in: PETREL_STANDIN_DIR is not set\n');
  process.exit(1);
}
const me = path.basename(process.argv[1]);
const args = process.argv.slice(2);
appendFileSync(path.join(dir, 'calls'), `${[me, ...args].join(' ')}\n`);

const words = args.filter((a) => !a.startsWith('-'));
const [action, ...units] = words;

// Work on unit files alone (`systemctl --root=/ preset`, which deb-systemd-helper runs to enable
// a unit on its first install) needs no running systemd: the real systemctl, next on PATH, does it.
if (me === 'systemctl' && args.some((a) => a.startsWith('--root='))) {
  const own = path.dirname(process.argv[1]);
  const real = (process.env.PATH ?? '')
    .split(':')
    .filter((d) => d !== '' && path.resolve(d) !== own)
    .map((d) => path.join(d, 'systemctl'))
    .find((f) => existsSync(f));
  if (real === undefined) {
    process.stderr.write('systemd stand-in: no real systemctl on PATH for a --root= call\n');
    process.exit(1);
  }
  process.exit(spawnSync(real, args, { stdio: 'inherit' }).status ?? 1);
}

/** The unit's `KEY=` values, continuation lines joined. */
function directive(unit, key) {
  const text = readFileSync(path.join('/lib/systemd/system', unit), 'utf8').replaceAll(/\\\n\s*/gu, ' ');
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1).trim());
}

const pidFile = (unit) => path.join(dir, `${unit}.pid`);
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
};

function start(unit) {
  if (!existsSync(path.join('/lib/systemd/system', unit))) return 5;
  if (existsSync(pidFile(unit)) && alive(Number(readFileSync(pidFile(unit), 'utf8')))) return 0;
  const log = openSync(path.join(dir, `${unit}.log`), 'a');
  for (const pre of directive(unit, 'ExecStartPre')) {
    const [command, ...rest] = pre.split(/\s+/u);
    const done = spawnSync(command, rest, { stdio: ['ignore', log, log] });
    if (done.status !== 0) return 1;
  }
  const [main] = directive(unit, 'ExecStart');
  if (main === undefined) return 1;
  const [command, ...rest] = main.split(/\s+/u);
  const child = spawn(command, rest, { detached: true, stdio: ['ignore', log, log] });
  writeFileSync(pidFile(unit), String(child.pid));
  child.unref();
  return 0;
}

async function stop(unit) {
  if (!existsSync(pidFile(unit))) return 0;
  const pid = Number(readFileSync(pidFile(unit), 'utf8'));
  if (alive(pid)) process.kill(pid, 'SIGTERM');
  for (const deadline = Date.now() + 30_000; alive(pid); ) {
    if (Date.now() > deadline) return 1;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  rmSync(pidFile(unit), { force: true });
  return 0;
}

let status = 0;
for (const unit of units) {
  if (action === 'start') status ||= start(unit);
  else if (action === 'stop') status ||= await stop(unit);
  else if (action === 'restart') status ||= (await stop(unit)) || start(unit);
}
// daemon-reload, enable, is-enabled, …: recorded, nothing to do.
process.exit(status);
