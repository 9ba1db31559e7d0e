#!/usr/bin/env node
// The `petrel` client executable: runs one subcommand with the real process I/O.

import { runPetrel } from './dispatch.js';
import { processIo } from './io.js';

process.exitCode = await runPetrel(process.argv.slice(2), processIo());
