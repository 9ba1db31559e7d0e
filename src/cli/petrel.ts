#!/usr/bin/env node
// The `petrel` client executable: runs one subcommand with the real process I/O. No top-level
// await: the shipped client is a CommonJS bundle of this module (scripts/build-client.mjs).

import { runPetrel } from './dispatch.js';
import { processIo } from './io.js';

void runPetrel(process.argv.slice(2), processIo()).then((code) => {
  process.exitCode = code;
});
