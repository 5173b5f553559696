import { defineTool } from '@helix-agents/sdk';
import { z } from 'zod';

/** Echoes its input. */
export const echoTool = defineTool({ name: 'echo', description: 'Echo', inputSchema: z.object({ text: z.string() }), execute: ({ text }) => ({ echoed: text }) });
