// The turn input the input crash test's child starts with (and the parent expects to see again).
import type { ModelMessage } from '@ai-sdk/provider-utils';

/** A PNG signature and a few bytes. */
export const CRASH_PNG_BASE64 = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 4, 2]).toString('base64');
/** A fake PDF. */
export const CRASH_PDF_BASE64 = Buffer.from('%PDF-1.4 crash').toString('base64');
/** An earlier exchange, then a user message with an image and a PDF. */
export const CRASH_INPUT: ModelMessage[] = [
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Hi, send the files.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Here they are.' },
      { type: 'image', image: Buffer.from(CRASH_PNG_BASE64, 'base64') },
      { type: 'file', data: CRASH_PDF_BASE64, mediaType: 'application/pdf', filename: 'crash.pdf' },
    ],
  },
];
