// Module resolution hook of `helix dev` (runs in Node's loader thread, so plain JS). `helix dev` imports
// the project's modules as `file.ts?helix-dev=<generation>`; this hook gives every module of the project
// folder that such a module imports the same query, so each reload imports the project's whole module
// graph afresh (agents, hooks and the tools and helpers they import). Modules outside the project folder
// and anything under node_modules keep their one cached copy (the helix packages stay single instances).

let root = '';

/** Receives the project folder (a file URL ending with '/'). */
export async function initialize(data) {
  root = data.root;
}

/** Carries the parent's generation query to the project-local modules it imports. */
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  const generation = context.parentURL ? /[?&]helix-dev=(\d+)/.exec(context.parentURL) : null;
  if (!generation || !result.url.startsWith(root) || result.url.includes('/node_modules/') || result.url.includes('?')) return result;
  return { ...result, url: `${result.url}?helix-dev=${generation[1]}` };
}
