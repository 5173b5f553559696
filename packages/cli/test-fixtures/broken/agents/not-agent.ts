/** Not an agent. */
export default { name: 'not-agent' };
