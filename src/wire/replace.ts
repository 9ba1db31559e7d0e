// Codec of Petrel's replace (differences (m)): a force-create with a liveness check, under a
// unikernel tag no Albatross release uses, so Albatross' own messages are untouched.
//
//   Command  unikernel [3] [29] SEQUENCE {
//              config      UnikernelConfig,           -- as create [21]; image empty = streamed
//              keepConfig  BOOLEAN,                   -- run it with the old configuration
//              within      INTEGER (1000..600000),    -- ms the new unikernel has to pass
//              probe       CHOICE { http [0] UTF8String,            -- URL
//                                   tcp [1] SEQUENCE { UTF8String, INTEGER (1..65535) },
//                                   console [2] UTF8String } }      -- regular expression
// The reply is a Success string, or a Failure saying why the check failed and what runs.

import type { LivenessProbe } from '../resources/liveness.js';
import { encConfig, readConfig } from './config.js';
import { ctx, type Der, enc, type Reader, unknownTag } from './der.js';
import { fault } from './errors.js';
import type { CreateCommand, ReplaceCheck } from './types.js';

/** The tag of the command in the unikernel group: [29], beside unikernel-exits' [30]. */
export const REPLACE_TAG = 29;

export function readReplace(r: Reader): CreateCommand {
  return r.sequence((s) => {
    const config = readConfig(s);
    const keepConfig = s.boolean('keep configuration');
    const at = s.offset;
    const withinMs = s.int('within');
    if (withinMs <= 0) fault('E_WIRE_INT_RANGE', `a check deadline of ${withinMs} ms`, at);
    const probe = s.choice('liveness probe', (n, inner): LivenessProbe => {
      switch (n) {
        case 0:
          return { kind: 'http', url: inner.utf8('URL') };
        case 1:
          return inner.sequence((t) => ({ kind: 'tcp', host: t.utf8('host'), port: t.int('port') }));
        case 2:
          return { kind: 'console', regex: inner.utf8('pattern') };
        default:
          return unknownTag('liveness probe', ctx(n), s.lastStart);
      }
    });
    return {
      type: 'unikernel-create',
      force: true,
      release: '2.7',
      config,
      check: { keepConfig, withinMs, probe },
    };
  });
}

export function encReplace(command: CreateCommand & { release: '2.7' }, check: ReplaceCheck): Der {
  return enc.sequence([
    encConfig(command.config),
    enc.boolean(check.keepConfig),
    enc.integer(check.withinMs),
    encProbe(check.probe),
  ]);
}

function encProbe(probe: LivenessProbe): Der {
  switch (probe.kind) {
    case 'http':
      return enc.explicit(0, enc.utf8(probe.url));
    case 'tcp':
      return enc.explicit(1, enc.sequence([enc.utf8(probe.host), enc.integer(probe.port)]));
    case 'console':
      return enc.explicit(2, enc.utf8(probe.regex));
  }
  return fault('E_WIRE_ENCODE', 'unknown liveness probe', null);
}
