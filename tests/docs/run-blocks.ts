/**
 * Runs documentation code blocks one after another in this process, for code-blocks.test.ts:
 *   node --conditions=helix-source --import tsx tests/docs/run-blocks.ts <manifest.json> <results.json>
 * The manifest lists `{ id, path }` of block files written by the test. Each block is imported in a fresh
 * temporary working folder with a time limit; the results file gets `{ id, ok, error?, ms }` per block.
 * Before each block a line `@@block <id>@@` goes to stdout and stderr, so the test can tell whose output is whose.
 * Importing the blocks in one process spares a Node and tsx start-up per block.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface Entry {
  readonly id: string;
  readonly path: string;
}
interface Outcome {
  readonly id: string;
  readonly ok: boolean;
  readonly error?: string;
  readonly ms: number;
}

const [manifestPath, resultsPath] = process.argv.slice(2);
if (manifestPath === undefined || resultsPath === undefined) throw new Error('usage: run-blocks.ts <manifest.json> <results.json>');
const entries = JSON.parse(readFileSync(manifestPath, 'utf8')) as Entry[];
const timeoutMs = Number(process.env.HELIX_DOC_BLOCK_TIMEOUT_MS ?? 20_000);
const outcomes: Outcome[] = [];
const stray = new Map<string, string[]>();
let current = '(before the first block)';

const describe = (error: unknown): string => (error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : `thrown: ${String(error)}`);
const save = (): void => writeFileSync(resultsPath, JSON.stringify({ outcomes, stray: Object.fromEntries(stray) }));
const strayError = (error: unknown): void => {
  stray.set(current, [...(stray.get(current) ?? []), describe(error)]);
  save();
};
process.on('unhandledRejection', strayError);
process.on('uncaughtException', strayError);

const home = process.cwd();
for (const entry of entries) {
  current = entry.id;
  process.stdout.write(`\n@@block ${entry.id}@@\n`);
  process.stderr.write(`\n@@block ${entry.id}@@\n`);
  const work = mkdtempSync(join(tmpdir(), 'helix-doc-block-'));
  process.chdir(work);
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      import(pathToFileURL(entry.path).href),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the block did not finish within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    outcomes.push({ id: entry.id, ok: true, ms: Math.round(performance.now() - started) });
  } catch (error) {
    outcomes.push({ id: entry.id, ok: false, error: describe(error), ms: Math.round(performance.now() - started) });
  } finally {
    clearTimeout(timer);
    process.chdir(home);
    // Let the block's last callbacks (a stream's close, a rejected promise nobody awaited) land on it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    rmSync(work, { recursive: true, force: true, maxRetries: 3 });
    save();
  }
}
current = '(after the last block)';
save();
// A block may leave a handle open (a timer, a pool); the results are written, so end here.
process.exit(0);
