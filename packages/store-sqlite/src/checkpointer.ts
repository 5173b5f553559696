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
/**
 * The log size, in pages, above which the worker restarts the log: it asks the writer to pause after its
 * current commit, copies what is left of the log and lets it start again from its beginning.
 */
export const CHECKPOINT_RESTART_ABOVE = 4_000;
/**
 * The log size, in pages, above which the committing connection restarts the log itself, waiting for the
 * end of the worker's round if it has to: the backstop for a worker that fell behind (a loaded machine). The
 * connection looks every {@link CHECKPOINT_LOOK_EVERY} write transactions, so the log of one connection
 * holds at most this many pages plus those of that many write transactions, unless another connection
 * reads an old snapshot (SQLite never restarts a log that a reader still uses).
 */
export const CHECKPOINT_HARD_LIMIT = 3 * CHECKPOINT_RESTART_ABOVE;
/** How many write transactions pass between two looks at the log's size. */
export const CHECKPOINT_LOOK_EVERY = 256;
/** How long a restarting checkpoint waits for a reader of an old snapshot, or another process's write lock (ms). */
const RESTART_WAIT_MS = 2_000;
/**
 * How long the connection's own restart waits for a reader or another process's write lock (ms): it runs
 * between two commits, so it waits only for short ones, and the next look tries again.
 */
const HARD_LIMIT_WAIT_MS = 100;
/** How long the worker waits for the writer to pause (ms); a connection that is not writing never answers, and then the write lock is free. */
const ASK_WAIT_MS = 100;
/** The longest the writer waits for the worker (ms): a restart ends by itself well within it; this only guards against a thread gone mid-round. */
const WAIT_CAP_MS = 5_000;
/**
 * The time between two rounds of the worker (ms), whether the last one copied frames or found nothing new.
 * Each round that copies fsyncs the log and the database file; rounds back to back made those fsyncs
 * compete with every commit's own (`synchronous = FULL`), and copied the same last pages again each time.
 */
export const CHECKPOINT_ROUND_MS = 20;

/** The sizes that drive the checkpoints; the defaults are the constants above (tests use small ones). Package-internal. */
export interface CheckpointLimits {
  /** Write transactions before the worker starts ({@link CHECKPOINT_WORKER_AFTER}). */
  readonly startAfter: number;
  /** Log pages past which the worker restarts the log ({@link CHECKPOINT_RESTART_ABOVE}). */
  readonly restartAbove: number;
  /** Log pages past which the connection restarts it ({@link CHECKPOINT_HARD_LIMIT}). */
  readonly hardLimit: number;
  /** Write transactions between two looks at the log's size ({@link CHECKPOINT_LOOK_EVERY}). */
  readonly lookEvery: number;
}

const DEFAULT_LIMITS: CheckpointLimits = { startAfter: CHECKPOINT_WORKER_AFTER, restartAbove: CHECKPOINT_RESTART_ABOVE, hardLimit: CHECKPOINT_HARD_LIMIT, lookEvery: CHECKPOINT_LOOK_EVERY };

/** What the connection and the worker counted, for tests and benchmarks. Package-internal. */
export interface CheckpointCounts {
  /** Passive checkpoints the worker ran: at most one every {@link CHECKPOINT_ROUND_MS}. */
  readonly workerRounds: number;
  /** Restarting checkpoints of the worker that completed (the log starts again at the next commit). */
  readonly workerRestarts: number;
  /** Restarting checkpoints of the worker that a reader of an old snapshot (or another process's writer) kept from completing. */
  readonly workerRestartsBusy: number;
  /** Times the connection paused after a commit for the worker's restart. */
  readonly pauses: number;
  /** Restarting checkpoints the connection ran itself past the hard limit, and those that completed. */
  readonly hardLimitRestarts: number;
  readonly hardLimitRestarted: number;
}

// The shared words. WRITES: the connection's write transactions so far. ALIVE: 1 while the worker's
// connection is open (read without waiting for a message: a writer that only awaits microtasks never sees
// one). ROUND: 1 while the worker is inside a checkpoint (it holds SQLite's checkpoint lock). GATE: the
// worker's request that the writer pause (ASKED), the writer's answer (PAUSED), OPEN once the restart ran.
// Then the worker's counters of CheckpointCounts, and PINNED: 1 when its last round found frames that a
// reader of an older snapshot still uses (no restart can complete until that reader ends). HOLD: 1 while the
// connection restarts the log itself (past the hard limit); the worker starts no round meanwhile.
// WORKER_ROUNDS: the passive checkpoints the worker ran.
const WRITES = 0;
const ALIVE = 1;
const ROUND = 2;
const GATE = 3;
const WORKER_RESTARTS = 4;
const WORKER_RESTARTS_BUSY = 5;
const PINNED = 6;
const HOLD = 7;
const WORKER_ROUNDS = 8;
const WORDS = 9;
const OPEN = 0;
const ASKED = 1;
const PAUSED = 2;

// The worker is plain CommonJS, evaluated from this string, so it runs the same from the sources and from
// the build, with no loader of its own. Each round is one passive checkpoint (it never waits for a lock),
// skipped when nothing was written since the last, and runs CHECKPOINT_ROUND_MS after the one before: a
// round copies every frame committed before it began, so a page many commits rewrote is copied once. A log starts
// again from its beginning only after a checkpoint copied every frame with no commit in between, which
// commits that never pause deny it; so past restartAbove pages the worker restarts the log. A restarting
// checkpoint needs the write lock, and SQLite's busy handler only polls for it (sleeping 1 to 100 ms between
// tries) while holding the checkpoint lock: a writer that commits back to back almost never leaves the lock
// free at a poll, so the worker asks the writer, through GATE, to pause after its current commit, and runs
// the restart while it waits. While a reader of an old snapshot keeps frames from being copied, the worker
// does not ask: the restart could only wait for that reader, with the writer paused.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const shared = new Int32Array(workerData.shared);
const { restartAbove } = workerData.limits;
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
function restart() {
  Atomics.store(shared, ${GATE}, ${ASKED});
  Atomics.notify(shared, ${ROUND});
  Atomics.wait(shared, ${GATE}, ${ASKED}, ${ASK_WAIT_MS});
  db.pragma('busy_timeout = ${RESTART_WAIT_MS}');
  try {
    return db.pragma('wal_checkpoint(RESTART)')[0];
  } finally {
    db.pragma('busy_timeout = 0');
    Atomics.store(shared, ${GATE}, ${OPEN});
    Atomics.notify(shared, ${GATE});
  }
}
function checkpoint() {
  const [status] = db.pragma('wal_checkpoint(PASSIVE)');
  Atomics.add(shared, ${WORKER_ROUNDS}, 1);
  // log -1: another connection holds the checkpoint lock, and nothing ran.
  if (status.log < 0) return;
  // Frames left behind past a few commits' worth: a reader of an older snapshot uses them, and a restart
  // would only wait for it with the writer paused.
  const pinned = status.log - status.checkpointed > Math.max(8, restartAbove >> 3);
  Atomics.store(shared, ${PINNED}, pinned ? 1 : 0);
  if (status.log > restartAbove && !pinned) {
    const result = restart();
    if (result.log >= 0) Atomics.add(shared, result.busy === 0 ? ${WORKER_RESTARTS} : ${WORKER_RESTARTS_BUSY}, 1);
    seen = -1;
  }
}
function round() {
  let next = ${CHECKPOINT_ROUND_MS};
  const writes = Atomics.load(shared, ${WRITES});
  if (Atomics.load(shared, ${HOLD}) === 1) next = 1;
  else if (writes !== seen) {
    seen = writes;
    Atomics.store(shared, ${ROUND}, 1);
    try {
      checkpoint();
    } catch (error) {
      // A busy database (another process checkpointing, a migration) is tried at the next round.
      if (!(error && error.code === 'SQLITE_BUSY')) parentPort.postMessage({ warn: String(error && error.message || error) });
    } finally {
      Atomics.store(shared, ${ROUND}, 0);
      Atomics.notify(shared, ${ROUND});
    }
  }
  timer = setTimeout(round, next);
}
parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearTimeout(timer);
  Atomics.store(shared, ${ALIVE}, 0);
  try { db.close(); } catch {}
  parentPort.close();
});
round();
`;

const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');

/** What {@link restartLogPast} did. Package-internal. */
export type LogRestart =
  /** The log holds no more pages than asked: nothing ran. */
  | 'below'
  /** The restarting checkpoint completed: the next commit writes the log from its beginning. */
  | 'restarted'
  /** Another connection (this process's worker, or another process) holds the checkpoint lock: nothing ran. */
  | 'locked'
  /** The checkpoint ran but could not complete: a reader of an old snapshot, or another process's writer, past the busy timeout. */
  | 'busy';

interface CheckpointRow {
  readonly busy: number;
  readonly log: number;
  readonly checkpointed: number;
}

/** The size of a log of `pages` frames: its 32-byte header, then each page with its 24-byte frame header. */
function logBytes(db: BetterSqlite3.Database, pages: number): number {
  return 32 + pages * (Number(db.pragma('page_size', { simple: true })) + 24);
}

/** Whether the log file of the database at `path` is larger than a log of `pages` pages. */
function logPast(db: BetterSqlite3.Database, path: string, pages: number): boolean {
  try {
    return statSync(`${path}-wal`).size > logBytes(db, pages);
  } catch {
    return false;
  }
}

/**
 * Runs a restarting checkpoint on `db` when the log of the database at `path` is larger than `pages`
 * pages, and says how it went. A busy database does not throw here: SQLite reports it in the checkpoint's
 * result row (`busy` 1), with `log` -1 when the checkpoint lock was taken and nothing ran (its busy handler is
 * never called for that lock). The log file keeps its size after a restart unless `journal_size_limit`
 * truncates it, which {@link BackgroundCheckpointer} sets to the hard limit. Package-internal.
 */
export function restartLogPast(db: BetterSqlite3.Database, path: string, pages: number): LogRestart {
  if (!logPast(db, path, pages)) return 'below';
  const [row] = db.pragma('wal_checkpoint(RESTART)') as CheckpointRow[];
  if (row === undefined || row.busy === 0) return 'restarted';
  return row.log < 0 ? 'locked' : 'busy';
}

/**
 * Background WAL checkpoints for one connection. After {@link CHECKPOINT_WORKER_AFTER} write
 * transactions it turns the connection's automatic checkpoint off and starts a worker thread with its own
 * connection to the file, which copies the log into the file as it grows; past
 * {@link CHECKPOINT_RESTART_ABOVE} pages the worker asks the connection to pause after its current commit
 * and restarts the log meanwhile; should the log still grow past {@link CHECKPOINT_HARD_LIMIT} pages, the
 * connection restarts it itself. When the thread stops or fails, the connection checkpoints inline again.
 * Either way the log stays bounded, unless a reader holds an old snapshot. Package-internal.
 */
export class BackgroundCheckpointer {
  readonly #db: BetterSqlite3.Database;
  readonly #path: string;
  readonly #warn: (message: string) => void;
  readonly #limits: CheckpointLimits;
  readonly #shared = new Int32Array(new SharedArrayBuffer(WORDS * 4));
  #worker: Worker | undefined;
  #writes = 0;
  #lookAt = 0;
  #stopped = false;
  #warnedBusy = false;
  #sizeLimit: number | undefined;
  #pauses = 0;
  #hardLimitRestarts = 0;
  #hardLimitRestarted = 0;

  constructor(db: BetterSqlite3.Database, path: string, warn: (message: string) => void, limits: Partial<CheckpointLimits> = {}) {
    this.#db = db;
    this.#path = path;
    this.#warn = warn;
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Whether the worker thread runs (and the connection's automatic checkpoint is off). */
  get running(): boolean {
    return !this.#stopped && Atomics.load(this.#shared, ALIVE) === 1;
  }

  /** What the connection and the worker did so far. */
  get counts(): CheckpointCounts {
    return {
      workerRounds: Atomics.load(this.#shared, WORKER_ROUNDS),
      workerRestarts: Atomics.load(this.#shared, WORKER_RESTARTS),
      workerRestartsBusy: Atomics.load(this.#shared, WORKER_RESTARTS_BUSY),
      pauses: this.#pauses,
      hardLimitRestarts: this.#hardLimitRestarts,
      hardLimitRestarted: this.#hardLimitRestarted,
    };
  }

  /** Called after each write transaction of the connection. */
  afterWrite(): void {
    if (this.#stopped || this.#db.inTransaction) return;
    const writes = ++this.#writes;
    if (this.#worker === undefined) {
      if (writes >= this.#limits.startAfter) this.#start();
      return;
    }
    Atomics.store(this.#shared, WRITES, writes);
    if (Atomics.load(this.#shared, GATE) === ASKED) this.#pause();
    if (writes >= this.#lookAt) this.#bound();
  }

  /** The worker asked for the write lock: waits (between two commits) until its restart ran. */
  #pause(): void {
    if (Atomics.compareExchange(this.#shared, GATE, ASKED, PAUSED) !== ASKED) return;
    Atomics.notify(this.#shared, GATE);
    this.#pauses++;
    Atomics.wait(this.#shared, GATE, PAUSED, WAIT_CAP_MS);
  }

  /**
   * Restarts the log from this connection when it holds more than {@link CHECKPOINT_HARD_LIMIT} pages. The
   * worker holds the checkpoint lock during its rounds, so a locked restart waits for the end of the round
   * (answering the worker's request to pause meanwhile) and tries again.
   */
  #bound(): void {
    this.#lookAt = this.#writes + this.#limits.lookEvery;
    if (!logPast(this.#db, this.#path, this.#limits.hardLimit)) return;
    const busyTimeout = Number(this.#db.pragma('busy_timeout', { simple: true }));
    try {
      // A restart waits (the busy timeout) for readers: a short while, and not at all for one the worker saw pinning the log.
      const pinned = Atomics.load(this.#shared, PINNED) === 1;
      Atomics.store(this.#shared, HOLD, 1);
      if (pinned || busyTimeout > HARD_LIMIT_WAIT_MS) this.#db.pragma(`busy_timeout = ${pinned ? 0 : HARD_LIMIT_WAIT_MS}`);
      let outcome = restartLogPast(this.#db, this.#path, this.#limits.hardLimit);
      for (let tries = 1; outcome === 'locked' && tries < 4 && this.#awaitRound(); tries++) outcome = restartLogPast(this.#db, this.#path, this.#limits.hardLimit);
      if (outcome === 'below') return;
      this.#hardLimitRestarts++;
      if (outcome === 'restarted') {
        this.#hardLimitRestarted++;
        this.#warnedBusy = false;
      } else if (outcome === 'locked') {
        // Another process checkpoints: look again at the next commit.
        this.#lookAt = this.#writes + 1;
      } else if (!this.#warnedBusy) {
        this.#warnedBusy = true;
        this.#warn(`the WAL is past ${this.#limits.hardLimit} pages and could not start again from its beginning (another connection reads an old snapshot, or holds the write lock); tried again every ${this.#limits.lookEvery} write transactions`);
      }
    } catch (error) {
      // Busy past the timeout (another process's checkpoint): the next look tries again.
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY') this.#warn(`a WAL checkpoint failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      Atomics.store(this.#shared, HOLD, 0);
      if (this.#db.open && Number(this.#db.pragma('busy_timeout', { simple: true })) !== busyTimeout) this.#db.pragma(`busy_timeout = ${busyTimeout}`);
    }
  }

  /** Waits until the worker is out of its round; false when it did not get out within {@link WAIT_CAP_MS}. */
  #awaitRound(): boolean {
    const deadline = Date.now() + WAIT_CAP_MS;
    for (;;) {
      if (Atomics.load(this.#shared, GATE) === ASKED) this.#pause();
      if (Atomics.load(this.#shared, ROUND) === 0) return true;
      const left = deadline - Date.now();
      if (left <= 0 || !this.running) return false;
      Atomics.wait(this.#shared, ROUND, 1, Math.min(left, ASK_WAIT_MS));
    }
  }

  /** Stops the worker (it closes its connection); the connection checkpoints inline from now on. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#db.open) {
      this.#db.pragma('wal_autocheckpoint = 1000');
      if (this.#sizeLimit !== undefined) this.#db.pragma(`journal_size_limit = ${this.#sizeLimit}`);
    }
    this.#worker?.postMessage('close');
  }

  #start(): void {
    const workerData = { driver: driverPath, path: this.#path, shared: this.#shared.buffer, limits: this.#limits };
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData, execArgv: [], stdout: false, stderr: false });
    worker.unref();
    this.#worker = worker;
    this.#db.pragma('wal_autocheckpoint = 0');
    // A restarted log is truncated back to the hard limit at its first commit, so that the file's size says
    // how far the log got since it last started again (without it, the file keeps its largest size).
    this.#sizeLimit = Number(this.#db.pragma('journal_size_limit', { simple: true }));
    this.#db.pragma(`journal_size_limit = ${logBytes(this.#db, this.#limits.hardLimit)}`);
    this.#lookAt = this.#writes + this.#limits.lookEvery;
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
