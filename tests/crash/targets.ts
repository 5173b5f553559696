// Opens the store a crash-test child runs on: `sqlite:<file>` or `postgres:<connection string>`.
import type { StateStore, StreamManager } from '@helix-agents/sdk';
import { openSqliteStores } from '@helix-agents/store-sqlite';
import { openPostgresStores } from '@helix-agents/store-postgres';

/** The stores of a crash-test target. */
export interface TargetStores {
  readonly stateStore: StateStore;
  readonly streamManager: StreamManager;
  close(): Promise<void> | void;
}

/** Opens `sqlite:<path>` or `postgres:<url>`. */
export async function openTarget(target: string): Promise<TargetStores> {
  if (target.startsWith('sqlite:')) return openSqliteStores({ path: target.slice('sqlite:'.length) });
  if (target.startsWith('postgres:')) return openPostgresStores({ connectionString: target.slice('postgres:'.length) });
  throw new Error(`unknown crash-test target ${target}`);
}
