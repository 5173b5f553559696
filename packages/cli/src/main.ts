// The `helix` process: bin/helix.js loads this module (through tsx when running from source).
import { runCli } from './cli.js';

const interrupt = new AbortController();
let interrupted = false;
process.on('SIGINT', () => {
  // The first Ctrl-C stops the turn cleanly (its work is saved); a second one exits at once.
  if (interrupted) process.exit(130);
  interrupted = true;
  interrupt.abort();
});

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, signal: interrupt.signal });
