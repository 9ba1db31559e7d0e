// Finds the tender executable in ONE order: the configured path when given (missing is an
// error), else the four candidates of semantics §8.1, else the bundled petrel-hvt or petrel-spt.

import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { bundledNativePath } from '../host/native.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { TenderKind } from './elf.js';

export interface LookupOptions {
  readonly kind: TenderKind;
  /** The ABI version the image's ABI note asks for. */
  readonly abiVersion: number;
  /** The state directory (Albatross' dbdir), where `solo5-<kind>[.<V>]` may be installed. */
  readonly stateDir: string;
  /** `--tender-hvt` / `--tender-spt`: when given, the only candidate. */
  readonly explicit?: string;
  /** The search path. Default `process.env.PATH`. Relative entries are ignored. */
  readonly searchPath?: string;
  /** The bundled hvt tender; null for none. Default `<package root>/native/build/petrel-hvt`. */
  readonly bundledHvt?: string | null;
  /** The bundled spt tender; null for none. Default `<package root>/native/build/petrel-spt`. */
  readonly bundledSpt?: string | null;
}

export type LookupError = PetrelError<'E_TENDER_MISSING'>;

/** `<package root>/native/build/petrel-hvt`. */
export function bundledHvtPath(): string | null {
  return bundledNativePath('petrel-hvt');
}

/** A regular file (after symlinks) that this process may execute. */
export async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function searchPath(program: string, pathList: string): Promise<string | null> {
  for (const dir of pathList.split(':')) {
    if (!path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, program);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/** Resolves to the tender's path; the caller then checks its `--version` (version.ts). */
export async function findTender(options: LookupOptions): Promise<Result<string, LookupError>> {
  if (options.explicit !== undefined) {
    if (await isExecutableFile(options.explicit)) return ok(options.explicit);
    return err('E_TENDER_MISSING', `tender ${options.explicit} does not exist or is not executable`, {
      looked: [options.explicit],
    });
  }
  const base = `solo5-${options.kind}`;
  const versioned = `${base}.${options.abiVersion}`;
  const pathList = options.searchPath ?? process.env.PATH ?? '';
  const looked: string[] = [];
  const inDir = async (program: string): Promise<string | null> => {
    const candidate = path.join(options.stateDir, program);
    looked.push(candidate);
    return (await isExecutableFile(candidate)) ? candidate : null;
  };
  const inPath = async (program: string): Promise<string | null> => {
    looked.push(program);
    return searchPath(program, pathList);
  };
  const configured = options.kind === 'hvt' ? options.bundledHvt : options.bundledSpt;
  const bundledPath = configured === undefined ? bundledNativePath(`petrel-${options.kind}`) : configured;
  const bundled = async (): Promise<string | null> => {
    if (bundledPath === null) return null;
    looked.push(bundledPath);
    return (await isExecutableFile(bundledPath)) ? bundledPath : null;
  };
  const found =
    (await inDir(versioned)) ??
    (await inPath(versioned)) ??
    (await inDir(base)) ??
    (await inPath(base)) ??
    (await bundled());
  if (found !== null) return ok(found);
  return err('E_TENDER_MISSING', `tender does not exist, looked for ${looked.join(', ')}`, { looked });
}
