// Fake tenders for tests: small shell scripts standing in for solo5-hvt / solo5-spt, which
// this machine cannot install (no solo5 package, no /dev/kvm). They print the two-line
// `--version` output on stderr as solo5 v0.12.1 does, and count their runs in a file.

import { chmod, writeFile } from 'node:fs/promises';

/** Writes an executable script at `file` that answers `--version` with `ABI version <abi>`. */
export async function writeFakeTender(
  file: string,
  options: { readonly abi?: string; readonly counter?: string; readonly mode?: number } = {},
): Promise<void> {
  const count = options.counter === undefined ? '' : `echo run >> '${options.counter}'\n`;
  const script = `#!/bin/sh
${count}if [ "$1" = "--version" ]; then
  echo "$(basename "$0") tender, version v0.12.1" >&2
  echo "ABI version ${options.abi ?? '2'}" >&2
  exit 0
fi
echo "$(basename "$0"): fake tender cannot run unikernels" >&2
exit 1
`;
  await writeFile(file, script);
  await chmod(file, options.mode ?? 0o755);
}
