// One server process's owner registry, for the owners test: claims every id given on the command line for
// `userId`, all at once, over the kv store of `target` (sqlite:<path> or postgres:<url>), and prints the
// owner each claim returned, as JSON.
import pg from 'pg';
import type { KVStore } from '@helix-agents/sdk/hooks';
import { openSqliteStores, SqliteKVStore } from '@helix-agents/store-sqlite';
import { PostgresKVStore } from '@helix-agents/store-postgres';
import { KVSessionOwners } from '../owners.js';

const [target = '', userId = '', ...ids] = process.argv.slice(2);
let kv: KVStore;
let close: () => Promise<void>;
if (target.startsWith('sqlite:')) {
  const stores = openSqliteStores({ path: target.slice('sqlite:'.length) });
  kv = new SqliteKVStore(stores.database);
  close = async () => stores.close();
} else {
  const pool = new pg.Pool({ connectionString: target.slice('postgres:'.length), max: 8 });
  kv = new PostgresKVStore(pool);
  close = () => pool.end();
}
const owners = new KVSessionOwners(kv);
// Both processes start claiming at the same moment: the parent releases them through stdin.
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
const claimed = await Promise.all(ids.map(async (id) => [id, await owners.claim(id, userId, Date.now())] as const));
process.stdout.write(JSON.stringify(Object.fromEntries(claimed)));
await close();
