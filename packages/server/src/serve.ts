import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve as honoServe } from '@hono/node-server';
import { ConfigError } from '@helix-agents/sdk';
import { helixAppInfo } from './app.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** The port (0: any free one; read it from the result). Default 3000. */
  readonly port?: number;
  /** The address to bind (default 127.0.0.1). An app with `auth: 'none'` only binds 127.0.0.1. */
  readonly hostname?: string;
}

/** A running server. */
export interface HelixServer {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** The Node HTTP server. */
  readonly server: Server;
  /** Stops accepting connections and closes the open ones (streams included). */
  close(): Promise<void>;
}

/** Anything with a fetch handler: a hono app. */
export interface FetchApp {
  fetch(request: Request, ...rest: never[]): Response | Promise<Response>;
}

/**
 * Serves an app on Node's HTTP server (through @hono/node-server) and resolves once it listens. An
 * app made with `auth: 'none'` binds 127.0.0.1 only (any other hostname is a ConfigError) and warns.
 */
export async function serve(app: FetchApp, options: ServeOptions = {}): Promise<HelixServer> {
  const info = helixAppInfo(app);
  const hostname = options.hostname ?? '127.0.0.1';
  if (info?.authNone) {
    if (hostname !== '127.0.0.1') throw new ConfigError(`An app with auth: 'none' only serves 127.0.0.1, not ${hostname}; give it an auth function to serve other addresses.`);
    info.logger.warn("server: auth is 'none': every request is served as user 'local'; listening on 127.0.0.1 only.");
  }
  const fetch = (request: Request): Response | Promise<Response> => app.fetch(request);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = honoServe({ fetch, port: options.port ?? 3000, hostname }, () => resolve(s as Server)) as Server;
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
