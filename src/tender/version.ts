// A tender's `--version` ABI line (solo5.md §1.5: two lines on stderr, the second exactly
// `ABI version N`), checked against the image, cached per executable file identity.

import { stat } from 'node:fs/promises';
import { runCommand } from '../host/command.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

export interface TenderVersion {
  /** N of the `ABI version N` line, or null when no line has exactly that form. */
  readonly abiVersion: number | null;
  /** The first output line (`solo5-hvt tender, version v0.12.1`). */
  readonly banner: string;
  /** Everything the tender printed (stderr, then stdout), trimmed. */
  readonly output: string;
}

export type VersionError = PetrelError<'E_HOST_COMMAND' | 'E_TENDER_VERSION'>;

export interface VersionOptions {
  /** How long `--version` may take. Default 5 000 ms. */
  readonly timeoutMs?: number;
}

/** Finds the line that is exactly the three words `ABI version <decimal>`. */
export function parseVersionOutput(output: string): TenderVersion {
  const lines = output.split('\n').map((line) => line.replace(/\r$/u, ''));
  let abiVersion: number | null = null;
  for (const line of lines) {
    const words = line.split(' ');
    if (
      words.length === 3 &&
      words[0] === 'ABI' &&
      words[1] === 'version' &&
      /^\d{1,9}$/u.test(words[2] ?? '')
    ) {
      abiVersion = Number(words[2]);
      break;
    }
  }
  return { abiVersion, banner: lines[0] ?? '', output: output.trim() };
}

/** Runs `<tender> --version` (no cache). A failing run is E_HOST_COMMAND with its stderr. */
export async function runTenderVersion(
  tender: string,
  options: VersionOptions = {},
): Promise<Result<TenderVersion, VersionError>> {
  const out = await runCommand(tender, ['--version'], { timeoutMs: options.timeoutMs ?? 5_000 });
  if (!out.ok) return out;
  return ok(parseVersionOutput(`${out.value.stderr}${out.value.stdout}`));
}

async function identity(file: string): Promise<string | null> {
  try {
    const st = await stat(file, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    return null;
  }
}

/**
 * `--version` results keyed by (path, device, inode, size, mtime): replacing or touching the
 * executable runs it again. Only successful runs are kept; a file that changed while it ran is
 * not cached.
 */
export class TenderVersionCache {
  readonly #entries = new Map<string, { readonly key: string; readonly version: TenderVersion }>();
  readonly #options: VersionOptions;

  constructor(options: VersionOptions = {}) {
    this.#options = options;
  }

  async get(tender: string): Promise<Result<TenderVersion, VersionError>> {
    const before = await identity(tender);
    const cached = this.#entries.get(tender);
    if (before !== null && cached?.key === before) return ok(cached.version);
    const run = await runTenderVersion(tender, this.#options);
    if (!run.ok) {
      this.#entries.delete(tender);
      return run;
    }
    const after = await identity(tender);
    if (before !== null && before === after) this.#entries.set(tender, { key: before, version: run.value });
    else this.#entries.delete(tender);
    return run;
  }
}

/**
 * The tender must print `ABI version <expected>` (semantics §8.1); otherwise Albatross' text
 * `unexpected solo5 tender --version output, expected one line with 'ABI version <V>', got <output>`.
 */
export async function checkTenderAbi(
  tender: string,
  expected: number,
  cache: TenderVersionCache = new TenderVersionCache(),
): Promise<Result<TenderVersion, VersionError>> {
  const version = await cache.get(tender);
  if (!version.ok) return version;
  if (version.value.abiVersion !== expected) {
    return err(
      'E_TENDER_VERSION',
      `unexpected solo5 tender --version output, expected one line with 'ABI version ${expected}', got ${version.value.output}`,
      { tender, expected, found: version.value.abiVersion },
    );
  }
  return version;
}
