// The images and files of a turn's input (runtime/input-attachments.ts), as the fifth mutation run found
// them: no SDK test asserted their refusals. Each bad part is refused with run_invalid_input naming its
// problem, and nothing is written; good parts are stored as the attachment they describe.
import { describe, expect, it } from 'vitest';
import { refusal, setup, textAgent } from './harness.js';

const PNG = 'iVBORw0KGgoAAAANSUhEUg==';

function userWith(part: Record<string, unknown>) {
  return [{ role: 'user', content: [{ type: 'text', text: 'look' }, part] }] as never;
}

async function refused(part: Record<string, unknown>) {
  const { executor, stateStore } = setup();
  const error = await refusal(executor.execute(textAgent([{ text: 'never' }]), userWith(part), { sessionId: 'att' }));
  expect(await stateStore.loadSession('att')).toBeUndefined();
  return error;
}

async function stored(part: Record<string, unknown>) {
  const { executor, stateStore } = setup();
  const handle = await executor.execute(textAgent([{ text: 'seen' }]), userWith(part));
  expect((await handle.result()).status).toBe('completed');
  const first = (await stateStore.loadSession(handle.sessionId))!.messages[0] as unknown as { attachments?: Record<string, unknown>[] };
  return first.attachments?.[0];
}

describe('refused image and file parts', () => {
  it.each([
    ['a media type that is not one', { type: 'image', image: PNG, mediaType: 'png' }, 'mediaType is not a media type like "image/png"'],
    ['a filename over 1024 characters', { type: 'file', data: PNG, mediaType: 'application/pdf', filename: 'f'.repeat(1025) }, 'filename must be a string of at most 1024 characters'],
    ['a filename that is not a string', { type: 'file', data: PNG, mediaType: 'application/pdf', filename: 7 }, 'filename must be a string of at most 1024 characters'],
    ['a file part without a media type', { type: 'file', data: PNG }, 'a file part needs its mediaType'],
    ['a file URL without a media type', { type: 'file', data: 'https://example.com/a.pdf' }, 'a file part needs its mediaType'],
    ['data that is neither a URL nor base64', { type: 'image', image: 'not base64!' }, 'the data is neither a URL nor valid base64'],
    ['base64 of a length that is not a multiple of four', { type: 'image', image: 'abc' }, 'the data is neither a URL nor valid base64'],
    ['a URL over 8192 characters', { type: 'image', image: `https://example.com/${'a'.repeat(8200)}` }, 'the URL is longer than 8192 characters'],
    ['a scheme other than http(s)', { type: 'image', image: 'ftp://example.com/a.png' }, 'the URL scheme ftp: is not allowed'],
    ['a URL object with another scheme', { type: 'image', image: new URL('file:///etc/passwd') }, 'the URL scheme file: is not allowed'],
    ['a data: URL with a long header', { type: 'image', image: `data:image/png;${'x'.repeat(300)};base64,${PNG}` }, "the data: URL's header is too long"],
    ['a data: URL that is not base64-encoded', { type: 'image', image: 'data:image/png,abcd' }, 'a data: URL must be base64-encoded (data:<type>;base64,<data>)'],
    ['a data: URL without a comma', { type: 'image', image: 'data:image/png;base64' }, 'a data: URL must be base64-encoded (data:<type>;base64,<data>)'],
    ['a data: URL holding bad base64', { type: 'image', image: 'data:image/png;base64,abc' }, 'the data: URL does not hold valid base64'],
    ['a data: URL with a bad media type', { type: 'image', image: `data:png;base64,${PNG}` }, "the data: URL's media type is not a media type"],
    ['data of another type', { type: 'image', image: 42 }, 'the data must be base64 text, a data: or http(s) URL, a URL, a Uint8Array or an ArrayBuffer'],
  ])('%s is refused with run_invalid_input saying so, and nothing is written', async (_name, part, problem) => {
    const error = await refused(part);
    expect(error.code).toBe('run_invalid_input');
    expect(error.message).toContain(`: ${problem}; nothing was written.`);
  });

  it('a scheme refusal hints that attachments take http(s) URLs and are never fetched', async () => {
    const error = await refused({ type: 'image', image: 'ftp://example.com/a.png' });
    expect(error.info.hint).toBe('Attachments take http(s) URLs (passed to the provider, never fetched by helix), data: URLs, base64 or bytes.');
  });

  it('a URL of exactly 8192 characters is kept as a URL', async () => {
    const url = `https://example.com/${'a'.repeat(8192 - 'https://example.com/'.length)}`;
    expect(url).toHaveLength(8192);
    expect(await stored({ type: 'image', image: url })).toMatchObject({ type: 'image', url });
  });
});

describe('stored image and file parts', () => {
  it('an image URL without a media type is stored as image/*', async () => {
    expect(await stored({ type: 'image', image: 'https://example.com/cat' })).toEqual({ type: 'image', mediaType: 'image/*', url: 'https://example.com/cat' });
  });

  it('an image given as bytes, an ArrayBuffer or base64 gets its media type from its signature, else image/*', async () => {
    const bytes = Buffer.from(PNG, 'base64');
    expect(await stored({ type: 'image', image: new Uint8Array(bytes) })).toEqual({ type: 'image', mediaType: 'image/png', data: PNG });
    const buffer = new ArrayBuffer(bytes.length);
    new Uint8Array(buffer).set(bytes);
    expect(await stored({ type: 'image', image: buffer })).toEqual({ type: 'image', mediaType: 'image/png', data: PNG });
    expect(await stored({ type: 'image', image: '/9j/4AAQ' })).toMatchObject({ mediaType: 'image/jpeg' });
    expect(await stored({ type: 'image', image: 'R0lGODlh' })).toMatchObject({ mediaType: 'image/gif' });
    expect(await stored({ type: 'image', image: 'UklGRiQA' })).toMatchObject({ mediaType: 'image/webp' });
    expect(await stored({ type: 'image', image: 'AAAAAAAA' })).toMatchObject({ mediaType: 'image/*' });
  });

  it('a data: URL gives its base64 and media type; one without a media type takes the sniffed one; a URL object works the same', async () => {
    expect(await stored({ type: 'image', image: `data:image/gif;base64,${PNG}` })).toEqual({ type: 'image', mediaType: 'image/gif', data: PNG });
    expect(await stored({ type: 'image', image: `data:;base64,${PNG}` })).toEqual({ type: 'image', mediaType: 'image/png', data: PNG });
    expect(await stored({ type: 'image', image: new URL(`data:image/gif;base64,${PNG}`) })).toEqual({ type: 'image', mediaType: 'image/gif', data: PNG });
    expect(await stored({ type: 'image', image: new URL('https://example.com/x.png') })).toEqual({ type: 'image', mediaType: 'image/*', url: 'https://example.com/x.png' });
  });

  it('a file part keeps its filename, and a file whose media type is an image is stored as an image', async () => {
    expect(await stored({ type: 'file', data: PNG, mediaType: 'application/pdf', filename: 'a.pdf' })).toEqual({ type: 'file', mediaType: 'application/pdf', filename: 'a.pdf', data: PNG });
    expect(await stored({ type: 'file', data: PNG, mediaType: 'image/png' })).toEqual({ type: 'image', mediaType: 'image/png', data: PNG });
    expect(await stored({ type: 'file', data: 'https://example.com/a.pdf', mediaType: 'application/pdf' })).toEqual({ type: 'file', mediaType: 'application/pdf', url: 'https://example.com/a.pdf' });
  });
});
