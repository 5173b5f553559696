/** A plain object that looks like a hook but did not go through defineHook. */
export default { events: { 'turn.completed': () => {} } };
