import { createHash } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { sessionTimeline } from './devtools-timeline.js';
import { checkId } from './ids.js';
import type { HelixServerContext } from './server-context.js';
import type { HelixEnv } from './app.js';
import { DEVTOOLS_SCRIPT } from './devtools-script.js';

/** Where the devtools page is served. */
export const DEVTOOLS_PATH = '/devtools';

const STYLE = `
:root { color-scheme: light; --bg: #f6f7f9; --panel: #fff; --line: #dde1e6; --ink: #1d2733; --muted: #66707c; --accent: #2f6fdf; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--ink); }
header { display: flex; align-items: center; gap: 12px; padding: 8px 16px; background: #1d2733; color: #fff; }
header h1 { font-size: 15px; margin: 0; font-weight: 600; }
header .spacer { flex: 1; }
button { font: inherit; cursor: pointer; border: 1px solid var(--line); background: #fff; border-radius: 4px; padding: 3px 8px; color: var(--ink); }
button:disabled { opacity: .5; cursor: default; }
header button { background: transparent; color: #fff; border-color: #55606c; }
#login { max-width: 420px; margin: 80px auto; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 20px; }
#login input { width: 100%; padding: 6px; margin: 8px 0; font: inherit; }
#app { display: grid; grid-template-columns: 250px 1fr; min-height: calc(100vh - 40px); }
aside { border-right: 1px solid var(--line); background: var(--panel); padding: 10px; }
aside ul { list-style: none; margin: 8px 0 0; padding: 0; }
button.session { display: grid; grid-template-columns: 1fr auto; width: 100%; text-align: left; margin-bottom: 4px; border-color: transparent; }
button.session.selected { border-color: var(--accent); background: #eef4ff; }
button.session .sid { font-family: ui-monospace, monospace; }
button.session .agent { color: var(--muted); grid-column: 1; }
button.session .status { grid-column: 2; grid-row: 1 / 3; align-self: center; }
.status.completed { color: #1c7c3c; } .status.failed, .status.interrupted { color: #b3261e; } .status.suspended { color: #a15c00; } .status.running { color: var(--accent); }
main > div { padding: 12px 16px; min-width: 0; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; margin-bottom: 12px; }
h2 #chat-target { text-transform: none; font-family: ui-monospace, monospace; }
h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 8px; }
#chat { display: flex; gap: 8px; align-items: center; }
#chat input { flex: 1; padding: 6px 8px; font: inherit; border: 1px solid var(--line); border-radius: 4px; }
.error { color: #b3261e; min-height: 1em; margin: 4px 0 0; }
dl { display: grid; grid-template-columns: repeat(7, auto); gap: 2px 14px; margin: 0; }
dt { color: var(--muted); font-size: 11px; grid-row: 1; } dd { margin: 0; grid-row: 2; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.approval { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; padding: 6px; background: #fff8e6; border: 1px solid #f0d48a; border-radius: 4px; }
.approval pre { margin: 0; flex: 1; white-space: pre-wrap; overflow-wrap: anywhere; }
.approval .approve { background: #1c7c3c; color: #fff; border-color: #1c7c3c; } .approval .reject { background: #b3261e; color: #fff; border-color: #b3261e; }
.lane { display: grid; grid-template-columns: 90px 1fr; border-top: 1px solid var(--line); padding: 4px 0; }
.lane-name { color: var(--muted); font-size: 11px; padding-top: 3px; }
.track { position: relative; min-height: 22px; }
.item { position: absolute; height: 20px; padding: 0 4px; font-size: 11px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; border-radius: 3px; text-align: left; }
.item.run { background: #e3ecfb; border-color: #9db8ea; } .item.run.completed { background: #e2f3e7; border-color: #93cda5; } .item.run.suspended { background: #fff1d6; border-color: #e9c46a; } .item.run.failed { background: #fbe3e1; border-color: #e49b95; }
.item.step { background: #eef0f3; } .item.tool.ok { background: #e2f3e7; } .item.tool.err { background: #fbe3e1; } .item.tool.open { background: #fff1d6; }
.item.commit { width: auto; background: #1d2733; color: #fff; border-color: #1d2733; transform: translateX(-50%); }
.item.hook { background: #efe6fb; border-color: #c3a7ea; } .item.hook.block, .item.hook.error { background: #fbe3e1; } .item.hook.rewrite { background: #fff1d6; }
#inspect { max-height: 160px; overflow: auto; background: #f6f7f9; margin: 8px 0 0; padding: 6px; font-size: 11px; }
#inspect:empty { display: none; }
.commit-row { margin-bottom: 6px; } .badge { display: inline-block; min-width: 26px; text-align: center; background: #1d2733; color: #fff; border-radius: 3px; margin-right: 6px; font-size: 11px; }
.diff { margin: 2px 0 0 32px; font-size: 11px; white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f7f9; padding: 4px 6px; }
.nodiff { margin-left: 32px; color: var(--muted); font-size: 11px; }
ol#commits { list-style: none; padding: 0; margin: 0; max-height: 260px; overflow: auto; }
table { border-collapse: collapse; width: 100%; font-size: 12px; } th { text-align: left; color: var(--muted); font-weight: 500; } td, th { padding: 2px 6px; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
tr.block td, tr.error td { color: #b3261e; } tr.rewrite td { color: #a15c00; }
.msg { display: grid; grid-template-columns: 80px 1fr; gap: 8px; padding: 3px 0; border-bottom: 1px solid var(--line); }
.msg .role { color: var(--muted); } .msg .text { white-space: pre-wrap; overflow-wrap: anywhere; }
#tail { max-height: 220px; overflow: auto; margin: 0; font-size: 11px; background: #1d2733; color: #d6dde5; padding: 6px; border-radius: 4px; }
#tail .line { display: grid; grid-template-columns: 40px 150px 1fr; gap: 6px; } #tail .seq { color: #7d8a97; } #tail .type { color: #9fc3ff; } #tail .what { white-space: pre-wrap; overflow-wrap: anywhere; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; } .cols > section { min-width: 0; }
.empty { color: var(--muted); }
`;

const BODY = `<header><h1>helix devtools</h1><span class="spacer"></span><button id="forget" type="button">Forget token</button></header>
<section id="login" hidden><h2>Sign in</h2><p>This server needs a token. Paste the bearer token you call its API with; it stays in this tab (session storage) and is sent as an Authorization header with every request.</p>
<form id="login-form"><input id="token" type="password" autocomplete="off" placeholder="Bearer token" aria-label="Bearer token"><button type="submit">Open</button></form><p id="login-error" class="error"></p></section>
<main id="app" hidden><aside><h2>Sessions</h2><button id="refresh" type="button">Refresh</button> <button id="new-session" type="button">New session</button><ul id="sessions"></ul></aside>
<div><section><h2>Chat with <span id="chat-target">a new session</span></h2><form id="chat"><select id="agent" aria-label="Agent"></select><input id="message" autocomplete="off" placeholder="Message the agent" aria-label="Message"><button id="send" type="submit">Send</button></form><p id="chat-error" class="error"></p></section>
<div id="detail" hidden><section id="summary"></section>
<section id="approvals" hidden><h2>Pending calls</h2><div id="approval-list"></div></section>
<section><h2>Timeline (runs, steps, tool calls, commits K1–K5, hook firings)</h2><div id="timeline"></div><pre id="inspect"></pre></section>
<div class="cols"><section><h2>Commits and their state diffs</h2><ol id="commits"></ol></section><section><h2>Hook firings</h2><table id="hooks"></table></section></div>
<div class="cols"><section><h2>Conversation</h2><div id="messages"></div></section><section><h2>Live tail</h2><pre id="tail"></pre><p id="tail-error" class="error"></p></section></div>
</div></div></main>`;

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The page, built once: static (no user data in it), its script and style allowed by hash. */
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>helix devtools</title><style>${STYLE}</style></head><body>${BODY}<script>${DEVTOOLS_SCRIPT}</script></body></html>`;

/**
 * The page's Content-Security-Policy: only its own inline script and style (by hash), requests to its
 * own origin, no frames, no forms posted elsewhere, no plugins.
 */
export const DEVTOOLS_CSP = [
  "default-src 'none'",
  `script-src ${hash(DEVTOOLS_SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The devtools page as a response (`status` 401 when the request was not authenticated: the page then asks for a token). */
export function devtoolsPage(status: 200 | 401): Response {
  return new Response(PAGE, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': DEVTOOLS_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
    },
  });
}

/** True for the request of the page itself (the one request a browser makes without the token). */
export function isDevtoolsPageRequest(c: Context<HelixEnv>): boolean {
  return c.req.method === 'GET' && (c.req.path === DEVTOOLS_PATH || c.req.path === `${DEVTOOLS_PATH}/`);
}

/** GET /devtools (unless `page` is false), GET /api/agents and GET /api/sessions/:id/timeline, behind the app's auth like every route. */
export function devtoolsRoutes(app: Hono<HelixEnv>, ctx: HelixServerContext, options: { readonly page: boolean }): void {
  if (options.page) {
    app.get(DEVTOOLS_PATH, () => devtoolsPage(200));
    app.get(`${DEVTOOLS_PATH}/`, () => devtoolsPage(200));
  }
  app.get('/api/agents', (c) => c.json({ agents: ctx.agentNames().map((name) => ({ name })) }));
  app.get('/api/sessions/:id/timeline', async (c) => {
    const sessionId = checkId(c.req.param('id'), 'session id');
    await ctx.owned(c.get('userId'), sessionId);
    return c.json(await sessionTimeline(ctx, sessionId));
  });
}
