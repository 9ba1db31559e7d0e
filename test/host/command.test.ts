import { describe, expect, it } from 'vitest';
import { runCommand } from '../../src/host/command.js';
import { failure, value } from './helpers.js';

describe('host commands', () => {
  it('returns stdout and stderr of a command that succeeds, given its stdin', async () => {
    const out = value(await runCommand('sh', ['-c', 'tr a-z A-Z; echo note >&2'], { input: 'petrel\n' }));
    expect(out).toEqual({ stdout: 'PETREL\n', stderr: 'note\n' });
  });

  it('names the command and gives its stderr when it fails', async () => {
    const error = failure(await runCommand('sh', ['-c', 'echo "no such bridge" >&2; exit 3']));
    expect(error.code).toBe('E_HOST_COMMAND');
    expect(error.message).toBe('sh -c echo "no such bridge" >&2; exit 3 failed: no such bridge');
    expect(error.details).toMatchObject({ exitCode: 3, signal: null });
  });

  it('says why when there is no stderr: exit status, a program that does not exist, a timeout', async () => {
    expect(failure(await runCommand('false', [])).message).toBe('false failed: exit status 1');
    expect(failure(await runCommand('/nonexistent/ip', ['link'])).message).toBe(
      '/nonexistent/ip link failed: ENOENT',
    );
    const started = Date.now();
    const slow = failure(await runCommand('sleep', ['10'], { timeoutMs: 200 }));
    expect(slow.message).toBe('sleep 10 failed: timed out after 200 ms');
    expect(slow.details).toMatchObject({ signal: 'SIGKILL' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('uses the label given for errors', async () => {
    expect(failure(await runCommand('false', [], { label: 'ip -batch: link set x up' })).message).toBe(
      'ip -batch: link set x up failed: exit status 1',
    );
  });
});
