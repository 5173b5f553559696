import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { ConfigError, consoleLogger, type AgentConfig, type AgentRuntime, type Logger, type UsageStore } from '@helix-agents/sdk';
import { LOCAL_USER_ID, type AuthOption } from './auth.js';
import { chatRoutes } from './chat-routes.js';
import { devtoolsPage, devtoolsRoutes, isDevtoolsPageRequest } from './devtools-page.js';
import { errorBody, httpStatusFor, ServerError } from './errors.js';
import { nativeRoutes } from './native-routes.js';
import { InMemorySessionOwners, type SessionOwners } from './owners.js';
import { DEFAULT_LIMITS, HelixServerContext, type ApprovalSigner, type HelixLimits } from './server-context.js';

/** The hono environment of a helix app: every handler after the auth check sees the caller's `userId` and the shared context. */
export interface HelixEnv {
  Variables: {
    /** The authenticated user (`local` under `auth: 'none'`). */
    userId: string;
    /** The runtime, agents, owner registry and limits, for routes added with `routes`. */
    helix: HelixServerContext;
  };
}

/** Cross-origin access; off unless given. */
export interface HelixCorsOptions {
  /** Origins allowed to call the API from a browser, e.g. `['https://app.example.com']`. */
  readonly origins: readonly string[];
  /** Allow cookies and the Authorization header from those origins (default true). */
  readonly credentials?: boolean;
}

/** Options of {@link createHelixApp}. */
export interface HelixAppOptions {
  /** Any AgentRuntime (JSAgentExecutor today). The agents are registered with it. */
  readonly runtime: AgentRuntime;
  /** The agents the server runs; the first is the default, a request may name another. */
  readonly agents: readonly AgentConfig<unknown, unknown>[];
  /** Required: who sent a request (null: 401). `'none'` serves everyone as `local`, on 127.0.0.1 only. */
  readonly auth: AuthOption;
  /** Who owns which session (default: in memory; see KVSessionOwners for one that survives restarts). */
  readonly owners?: SessionOwners;
  /** Recorded usage; passed to every run and read by GET /api/sessions/:id. */
  readonly usageStore?: UsageStore;
  /** Request size limits (413 beyond them). */
  readonly limits?: Partial<HelixLimits>;
  /** Cross-origin access (off when absent: browsers may only call from the same origin). */
  readonly cors?: HelixCorsOptions;
  /** Signs the owner's approval decisions when the runtime requires signatures (JSAgentExecutor's `approvalSecret`). */
  readonly signApproval?: ApprovalSigner;
  /** An SSE comment is sent after this long without an event (default 15 s). */
  readonly keepAliveMs?: number;
  readonly logger?: Logger;
  /**
   * Serve the devtools page at /devtools (default true). The page itself holds no data: every data
   * request it makes carries the user's token and goes through `auth` (see docs/devtools.md).
   */
  readonly devtools?: boolean;
  /**
   * Adds routes after the built-in ones, behind the same auth check (a devtools page, say); handlers
   * read `c.get('userId')` and `c.get('helix')`.
   */
  readonly routes?: (app: Hono<HelixEnv>, context: HelixServerContext) => void;
}

/** What serve() needs to know about an app it did not make. */
export interface HelixAppInfo {
  readonly authNone: boolean;
  readonly logger: Logger;
  readonly context: HelixServerContext;
}

const APPS = new WeakMap<object, HelixAppInfo>();

/** How an app made by {@link createHelixApp} was configured; undefined for any other object. */
export function helixAppInfo(app: object): HelixAppInfo | undefined {
  return APPS.get(app);
}

/**
 * The helix HTTP app (a hono app): the AI SDK UI message stream endpoints under /api/chat and the
 * native API under /api/sessions, over any AgentRuntime. Every route goes through `auth`; a session
 * is its creator's, and every other user gets 404 for it. Run it with {@link serve}, or mount
 * `app.fetch` in any server that speaks the fetch API.
 */
export function createHelixApp(options: HelixAppOptions): Hono<HelixEnv> {
  if (options.auth === undefined || (options.auth !== 'none' && typeof options.auth !== 'function')) {
    throw new ConfigError("createHelixApp needs `auth`: a function from the Request to { userId } or null (e.g. bearerAuth({ [token]: userId })), or 'none' for a server on 127.0.0.1 only.");
  }
  if (!Array.isArray(options.agents) || options.agents.length === 0) throw new ConfigError('createHelixApp needs at least one agent.');
  const logger = options.logger ?? consoleLogger;
  for (const agent of options.agents) options.runtime.registerAgent(agent);
  const ctx = new HelixServerContext({
    runtime: options.runtime,
    agents: options.agents,
    owners: options.owners ?? new InMemorySessionOwners(),
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    logger,
    keepAliveMs: options.keepAliveMs ?? 15_000,
    usageStore: options.usageStore,
    signApproval: options.signApproval,
  });
  const app = new Hono<HelixEnv>();
  if (options.cors) {
    const origins = [...options.cors.origins];
    app.use('*', cors({ origin: origins, credentials: options.cors.credentials ?? true, allowHeaders: ['authorization', 'content-type', 'last-event-id'], allowMethods: ['GET', 'POST', 'OPTIONS'], exposeHeaders: ['x-vercel-ai-ui-message-stream'] }));
  }
  const auth = options.auth;
  app.use('*', async (c, next) => {
    const identity = auth === 'none' ? { userId: LOCAL_USER_ID } : await auth(c.req.raw);
    // The page is static and holds no data; a browser loads it without the token, so the refused load
    // answers 401 with the page, which asks for the token and sends it with every data request.
    if (!identity && options.devtools !== false && isDevtoolsPageRequest(c)) return devtoolsPage(401);
    if (!identity) throw new ServerError('http_unauthorized', 'The request is not authenticated.');
    if (typeof identity.userId !== 'string' || identity.userId.length === 0 || identity.userId.length > 256) {
      // The server's own auth function is wrong: a 500 (logged), not the client's fault.
      throw new Error('The auth function returned an identity without a userId of 1 to 256 characters.');
    }
    c.set('userId', identity.userId);
    c.set('helix', ctx);
    await next();
  });
  app.onError((error, c) => {
    const status = httpStatusFor(error);
    if (status >= 500) logger.error('server: request failed', { path: c.req.path, error: error instanceof Error ? error.message : String(error) });
    return c.json(errorBody(error), status as 500);
  });
  app.notFound((c) => c.json(new ServerError('http_not_found', `No route ${c.req.method} ${c.req.path}.`).info, 404));
  chatRoutes(app, ctx);
  nativeRoutes(app, ctx);
  devtoolsRoutes(app, ctx, { page: options.devtools !== false });
  options.routes?.(app, ctx);
  APPS.set(app, { authNone: auth === 'none', logger, context: ctx });
  return app;
}
