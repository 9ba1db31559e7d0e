// The format of `<stateDir>/web-token-usage.json`, which petreld's web API writes (web/usage.ts)
// and `petrel ca token --list` reads: per token id, its name, delegation, expiry, uses, last use.

/** The file's name in the state directory. */
export const USAGE_FILE = 'web-token-usage.json';

export interface TokenUse {
  readonly name: string;
  readonly delegation: string;
  readonly expires: string;
  readonly uses: number;
  readonly lastUsed: string;
}

/** The tokens of a usage file by id; anything that is not one is left out. Pure. */
export function parseUsage(text: string): Map<string, TokenUse> {
  const out = new Map<string, TokenUse>();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return out;
  }
  const tokens = (value as { tokens?: unknown } | null)?.tokens;
  if (typeof tokens !== 'object' || tokens === null) return out;
  for (const [id, raw] of Object.entries(tokens as Record<string, unknown>)) {
    const t = raw as Partial<TokenUse> | null;
    if (!/^[0-9a-f]{32}$/.test(id) || t === null || typeof t !== 'object') continue;
    if (typeof t.name !== 'string' || typeof t.delegation !== 'string' || typeof t.uses !== 'number')
      continue;
    if (typeof t.expires !== 'string' || typeof t.lastUsed !== 'string') continue;
    out.set(id, {
      name: t.name,
      delegation: t.delegation,
      expires: t.expires,
      uses: t.uses,
      lastUsed: t.lastUsed,
    });
  }
  return out;
}

export function printUsage(tokens: ReadonlyMap<string, TokenUse>): string {
  return `${JSON.stringify({ tokens: Object.fromEntries(tokens) }, null, 2)}\n`;
}
