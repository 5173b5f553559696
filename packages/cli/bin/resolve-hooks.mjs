// Module resolution hooks of the `helix` launcher (they run in Node's loader thread, so plain JS).
// 1. From source, add the "helix-source" export condition, so workspace packages resolve to their
//    TypeScript sources exactly as with `node --conditions=helix-source`.
// 2. A bare import that the project cannot resolve (a folder scaffolded by `helix init` has no
//    node_modules yet) is resolved again from this package, so it borrows the CLI's own copies of
//    @helix-agents/*, zod and @ai-sdk/openai.

let fallbackParent = '';
let sourceCondition = false;

/** Receives the launcher's settings. */
export async function initialize(data) {
  fallbackParent = data.fallbackParent;
  sourceCondition = data.sourceCondition === true;
}

function isBare(specifier) {
  return !/^(\.{1,2}\/|\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier);
}

/** Adds the source condition, and retries unresolvable bare specifiers from the CLI package. */
export async function resolve(specifier, context, nextResolve) {
  const conditions = sourceCondition && !context.conditions.includes('helix-source') ? [...context.conditions, 'helix-source'] : context.conditions;
  const withConditions = { ...context, conditions };
  try {
    return await nextResolve(specifier, withConditions);
  } catch (error) {
    if (!isBare(specifier) || error?.code !== 'ERR_MODULE_NOT_FOUND' || context.parentURL === fallbackParent) throw error;
    return nextResolve(specifier, { ...withConditions, parentURL: fallbackParent });
  }
}
