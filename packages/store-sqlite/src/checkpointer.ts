import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * Who copies the write-ahead log back into the database file (a WAL checkpoint).
 *
 * - `'background'` (the default for a file): a worker thread with its own connection copies the log
 *   into the file, so a commit never waits for that copy. SQLite's own inline checkpoint, which the committing
 *   connection runs after every 1,000 pages of log, stalls that commit for milliseconds (it writes the
 *   pages into the file and, whatever `synchronous` says, fsyncs it).
 * - `'inline'`: SQLite's default, the automatic checkpoint in the committing connection.
 *
 * Durability is the same either way: a commit is durable once it is in the log (with `FULL`, once the
 * log is fsynced); a checkpoint only moves committed pages.
 */
export type SqliteCheckpointMode = 'background' | 'inline';

/** Write transactions before the worker starts: a short-lived database never starts a thread. */
export const CHECKPOINT_WORKER_AFTER = 256;
/** The log size, in pages, above which the worker's checkpoint restarts the log, holding commits back while it runs. */
export const CHECKPOINT_RESTART_ABOVE = 4_000;
/**
 * The log size, in pages, above which the committing connection restarts the log itself: the worker's
 * restarting checkpoint has to catch the write lock between commits, and a writer with no pause, on a
 * loaded machine, can keep it from doing so for long. The connection looks every
 * {@link CHECKPOINT_LOOK_EVERY} write transactions.
 */
export const CHECKPOINT_HARD_LIMIT = 3 * CHECKPOINT_RESTART_ABOVE;
/** How many write transactions pass between two looks at the log's size. */
const CHECKPOINT_LOOK_EVERY = 256;
/** How long the worker's restarting checkpoint waits for the lock (ms). */
const RESTART_WAIT_MS = 2_000;
/** How long the worker sleeps when there is nothing to copy (ms). */
const IDLE_MS = 20;

// The shared words: the connection's write transactions so far, and 1 while the worker's connection is
// open (read without waiting for a message: a writer that only awaits microtasks never sees one).
const WRITES = 0;
const ALIVE = 1;

// The worker is plain CommonJS, evaluated from this string, so it runs the same from the sources and from
// the build, with no loader of its own. Each round is one passive checkpoint (it never waits for a lock),
// skipped when nothing was written since the last; it runs the next round at once while rounds copy frames
// (a round that races commits leaves the frames they added behind it), else after IDLE_MS. A log starts
// again from its beginning only after a checkpoint copied every frame with no commit in between, which
// commits that never pause deny it; so a log past CHECKPOINT_RESTART_ABOVE pages gets a restarting
// checkpoint, which holds new commits back until it copied everything (the one stall left, and a rare one).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const shared = new Int32Array(workerData.shared);
let db;
try {
  db = new Database(workerData.path, { timeout: 0 });
} catch (error) {
  parentPort.postMessage({ failed: String(error && error.message || error) });
  process.exit(0);
}
Atomics.store(shared, ${ALIVE}, 1);
let timer;
let seen = -1;
let copied = -1;
function round() {
  let next = ${IDLE_MS};
  const writes = Atomics.load(shared, ${WRITES});
  if (writes !== seen) {
    seen = writes;
    try {
      const [status] = db.pragma('wal_checkpoint(PASSIVE)');
      if (status.log > ${CHECKPOINT_RESTART_ABOVE}) {
        db.pragma('busy_timeout = ${RESTART_WAIT_MS}');
        try { db.pragma('wal_checkpoint(RESTART)'); } finally { db.pragma('busy_timeout = 0'); }
        seen = -1;
      } else if (status.log > 0 && status.checkpointed !== copied) next = 0;
      copied = status.checkpointed;
    } catch (error) {
      // A busy database (another process checkpointing, a migration) is tried at the next round.
      if (!(error && error.code === 'SQLITE_BUSY')) parentPort.postMessage({ warn: String(error && error.message || error) });
    }
  }
  timer = next === 0 ? setImmediate(round) : setTimeout(round, next);
}
parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearTimeout(timer);
  clearImmediate(timer);
  Atomics.store(shared, ${ALIVE}, 0);
  try { db.close(); } catch {}
  parentPort.close();
});
round();
`;

const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Runs a restarting checkpoint on `db` when the log of the database at `path` holds more than `pages`
 * pages; returns whether it did. Throws what the checkpoint throws (SQLITE_BUSY past the busy timeout).
 * Package-internal.
 */
export function restartLogPast(db: BetterSqlite3.Database, path: string, pages: number): boolean {
  let size: number;
  try {
    size = statSync(`${path}-wal`).size;
  } catch {
    return false;
  }
  const frameBytes = Number(db.pragma('page_size', { simple: true })) + 24;
  if (size <= pages * frameBytes) return false;
  db.pragma('wal_checkpoint(RESTART)');
  return true;
}

/**
 * Background WAL checkpoints for one connection. After {@link CHECKPOINT_WORKER_AFTER} write
 * transactions it turns the connection's automatic checkpoint off and starts a worker thread with its own
 * connection to the file, which copies the log into the file as it grows; a log past
 * {@link CHECKPOINT_RESTART_ABOVE} pages is copied with commits held back until it can start again from its
 * beginning; should the log still grow past {@link CHECKPOINT_HARD_LIMIT} pages, the connection restarts it
 * itself. When the thread stops or fails, the connection checkpoints inline again. Either way the log
 * stays bounded. Package-internal.
 */
export class BackgroundCheckpointer {
  readonly #db: BetterSqlite3.Database;
  readonly #path: string;
  readonly #warn: (message: string) => void;
  readonly #shared = new Int32Array(new SharedArrayBuffer(8));
  #worker: Worker | undefined;
  #writes = 0;
  #stopped = false;

  constructor(db: BetterSqlite3.Database, path: string, warn: (message: string) => void) {
    this.#db = db;
    this.#path = path;
    this.#warn = warn;
  }

  /** Whether the worker thread runs (and the connection's automatic checkpoint is off). */
  get running(): boolean {
    return !this.#stopped && Atomics.load(this.#shared, ALIVE) === 1;
  }

  /** Called after each write transaction of the connection. */
  afterWrite(): void {
    if (this.#stopped || this.#db.inTransaction) return;
    const writes = ++this.#writes;
    if (this.#worker === undefined) {
      if (writes >= CHECKPOINT_WORKER_AFTER) this.#start();
      return;
    }
    Atomics.store(this.#shared, WRITES, writes);
    if (writes % CHECKPOINT_LOOK_EVERY === 0) this.#bound();
  }

  /** Restarts the log from this connection when the worker let it grow past {@link CHECKPOINT_HARD_LIMIT} pages. */
  #bound(): void {
    try {
      restartLogPast(this.#db, this.#path, CHECKPOINT_HARD_LIMIT);
    } catch (error) {
      // Busy past the timeout (another checkpoint): the next look tries again.
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY') this.#warn(`a WAL checkpoint failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Stops the worker (it closes its connection); the connection checkpoints inline from now on. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#db.open) this.#db.pragma('wal_autocheckpoint = 1000');
    this.#worker?.postMessage('close');
  }

  #start(): void {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: driverPath, path: this.#path, shared: this.#shared.buffer }, execArgv: [], stdout: false, stderr: false });
    worker.unref();
    this.#worker = worker;
    this.#db.pragma('wal_autocheckpoint = 0');
    // After stop() (the connection closed), what the thread says no longer matters: its file may be gone.
    worker.on('message', (message: { failed?: string; warn?: string }) => {
      if (this.#stopped) return;
      if (message.warn !== undefined) this.#warn(`a background WAL checkpoint failed: ${message.warn}`);
      if (message.failed !== undefined) {
        this.#warn(`the WAL checkpoint thread could not open the database (${message.failed}); checkpoints run inline`);
        this.stop();
      }
    });
    worker.on('error', (error) => {
      if (this.#stopped) return;
      this.#warn(`the WAL checkpoint thread failed (${error.message}); checkpoints run inline`);
      this.stop();
    });
    worker.on('exit', () => {
      if (!this.#stopped) this.stop();
    });
  }
}
