// Codec of Petrel's one wire extension (differences (l)): the unikernel-exits command and its
// reply, under tags no Albatross release uses, so Albatross' own messages are untouched.
//
//   Command  unikernel [3] [30] NULL
//   Success  [30] SEQUENCE OF SEQUENCE {
//              name      UTF8String,              -- relative to the path asked, as in info
//              exit      UTF8String,              -- "exit 3", "signal SIGXFSZ"
//              limit     [0] UTF8String OPTIONAL, -- the jail limit that ended it
//              at        GeneralizedTime,         -- when it exited
//              restarts  INTEGER (0..),           -- restarts on failure in the rate window
//              outcome   CHOICE { restarted [1] NULL, restarting [2] GeneralizedTime,
//                                 dropped [3] UTF8String } }   -- restart due / why it is gone

import { ctx, type Der, enc, type Reader, unknownTag } from './der.js';
import { fault } from './errors.js';
import type { ExitOutcome, Name, Named, UnikernelExit } from './types.js';

/** The tag of the command (in the unikernel group) and of its Success: [30], the last one-byte
 * context tag, far from Albatross' (commands end at [21] in 2.7, Success at [13]). */
export const EXITS_TAG = 30;

export function readExitEntry(r: Reader, readName: (r: Reader) => Name): Named<UnikernelExit> {
  return r.sequence((s) => {
    const name = readName(s);
    const exitAt = s.offset;
    const exit = s.utf8('exit');
    if (exit.length === 0) fault('E_WIRE_EXIT', 'an empty exit description', exitAt);
    const limit = s.optionalExplicit(0, (x) => x.utf8('limit'));
    const at = s.generalizedTime('exit time');
    const countAt = s.offset;
    const restarts = s.int('restarts');
    if (restarts < 0) fault('E_WIRE_INT_RANGE', `negative restart count ${restarts}`, countAt);
    return { name, info: { exit, limit, at, restarts, outcome: readOutcome(s) } };
  });
}

function readOutcome(r: Reader): ExitOutcome {
  return r.choice('exit outcome', (n, inner): ExitOutcome => {
    switch (n) {
      case 1:
        inner.null();
        return { kind: 'restarted' };
      case 2:
        return { kind: 'restarting', restartAt: inner.generalizedTime('restart time') };
      case 3:
        return { kind: 'dropped', reason: inner.utf8('reason') };
      default:
        return unknownTag('exit outcome', ctx(n), r.lastStart);
    }
  });
}

export function encExitEntry(entry: Named<UnikernelExit>, encName: (name: Name) => Der): Der {
  const { exit, limit, at, restarts, outcome } = entry.info;
  if (exit.length === 0) fault('E_WIRE_ENCODE', 'an empty exit description', null);
  if (!Number.isSafeInteger(restarts) || restarts < 0)
    fault('E_WIRE_ENCODE', `restart count ${restarts} is not a count`, null);
  return enc.sequence([
    encName(entry.name),
    enc.utf8(exit),
    ...(limit === null ? [] : [enc.explicit(0, enc.utf8(limit))]),
    enc.generalizedTime(at),
    enc.integer(restarts),
    encOutcome(outcome),
  ]);
}

function encOutcome(outcome: ExitOutcome): Der {
  switch (outcome.kind) {
    case 'restarted':
      return enc.explicit(1, enc.null());
    case 'restarting':
      return enc.explicit(2, enc.generalizedTime(outcome.restartAt));
    case 'dropped':
      return enc.explicit(3, enc.utf8(outcome.reason));
  }
  return fault('E_WIRE_ENCODE', `unknown exit outcome ${String((outcome as { kind?: unknown }).kind)}`, null);
}
