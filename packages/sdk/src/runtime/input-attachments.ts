// Images and files of a turn's input: AI SDK data content (base64, data URLs, bytes, URLs) turned into
// the JSON-serializable attachments a stored user message keeps. Nothing here fetches a URL.
import { AgentError } from '../errors.js';
import type { MessageAttachment } from '../messages.js';

/** What a part's data may be: base64 text, a data: or http(s) URL (as text or a URL), or bytes. */
export type AttachmentSource = string | URL | Uint8Array | ArrayBuffer;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
// type/subtype, as RFC 6838 restricts the characters (parameters are not kept).
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/(?:\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})$/;
const MAX_FILENAME = 1024;
const MAX_URL = 8192;

/** `run_invalid_input` for a turn input that is not one helix takes; `where` names the message and part. */
export function invalidInput(where: string, problem: string, hint?: string): AgentError {
  return new AgentError('run_invalid_input', `The turn input is invalid at ${where}: ${problem}; nothing was written.`, {
    details: { where },
    hint: hint ?? 'Pass a string, or an array of AI SDK ModelMessages or UIMessages (user, assistant and tool messages, ending with a user message). See docs/input.md.',
  });
}

/** An attachment and its decoded size in bytes (0 for a URL). */
export interface NormalizedAttachment {
  readonly attachment: MessageAttachment;
  readonly bytes: number;
}

/**
 * Turns an AI SDK image or file part's data into a stored attachment: bytes become base64, a data URL is
 * decoded to its base64 and media type, an http(s) URL is kept as text. Anything else is refused.
 */
export function toAttachment(type: 'image' | 'file', source: unknown, mediaType: unknown, filename: unknown, where: string): NormalizedAttachment {
  if (mediaType !== undefined && (typeof mediaType !== 'string' || !MEDIA_TYPE.test(mediaType))) throw invalidInput(where, 'mediaType is not a media type like "image/png"');
  if (filename !== undefined && (typeof filename !== 'string' || filename.length > MAX_FILENAME)) throw invalidInput(where, `filename must be a string of at most ${MAX_FILENAME} characters`);
  const named = filename === undefined ? {} : { filename: filename as string };
  const data = inlineData(source, where);
  if (data.kind === 'url') {
    const media = (mediaType as string | undefined) ?? (type === 'image' ? 'image/*' : undefined);
    if (media === undefined) throw invalidInput(where, 'a file part needs its mediaType');
    return { attachment: { type: kindOf(type, media), mediaType: media, ...named, url: data.url }, bytes: 0 };
  }
  const media = (mediaType as string | undefined) ?? data.mediaType ?? (type === 'image' ? sniffImage(data.base64) : undefined);
  if (media === undefined) throw invalidInput(where, 'a file part needs its mediaType');
  return { attachment: { type: kindOf(type, media), mediaType: media, ...named, data: data.base64 }, bytes: Buffer.byteLength(data.base64, 'base64') };
}

/** An image is an image however it came (a useChat file part of type image/png is one). */
function kindOf(type: 'image' | 'file', mediaType: string): 'image' | 'file' {
  return mediaType.startsWith('image/') ? 'image' : type;
}

type Inline = { readonly kind: 'inline'; readonly base64: string; readonly mediaType?: string } | { readonly kind: 'url'; readonly url: string };

function inlineData(source: unknown, where: string): Inline {
  if (source instanceof Uint8Array) return { kind: 'inline', base64: Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString('base64') };
  if (source instanceof ArrayBuffer) return { kind: 'inline', base64: Buffer.from(source).toString('base64') };
  if (source instanceof URL) return source.protocol === 'data:' ? fromDataUrl(source.href, where) : fromUrl(source.href, where);
  if (typeof source !== 'string') throw invalidInput(where, 'the data must be base64 text, a data: or http(s) URL, a URL, a Uint8Array or an ArrayBuffer');
  // A data: URL is read as text (it may be megabytes long); no URL object is made of it.
  if (/^data:/i.test(source)) return fromDataUrl(source, where);
  // As the AI SDK reads data content: text that parses as a URL is a URL, anything else is base64.
  if (source.length <= MAX_URL && URL.canParse(source)) return fromUrl(source, where);
  if (source.length > MAX_URL && /^[A-Za-z][A-Za-z0-9+.-]*:/.test(source)) throw invalidInput(where, `the URL is longer than ${MAX_URL} characters`);
  if (source.length % 4 !== 0 || !BASE64.test(source)) throw invalidInput(where, 'the data is neither a URL nor valid base64');
  return { kind: 'inline', base64: source };
}

function fromUrl(text: string, where: string): Inline {
  if (text.length > MAX_URL) throw invalidInput(where, `the URL is longer than ${MAX_URL} characters`);
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidInput(where, `the URL scheme ${url.protocol} is not allowed`, 'Attachments take http(s) URLs (passed to the provider, never fetched by helix), data: URLs, base64 or bytes.');
  }
  return { kind: 'url', url: url.href };
}

function fromDataUrl(text: string, where: string): Inline {
  const comma = text.indexOf(',');
  if (comma > 300) throw invalidInput(where, "the data: URL's header is too long");
  const header = text.slice('data:'.length, comma < 0 ? undefined : comma);
  const params = header.split(';');
  if (comma < 0 || params[params.length - 1] !== 'base64') throw invalidInput(where, 'a data: URL must be base64-encoded (data:<type>;base64,<data>)');
  const base64 = text.slice(comma + 1);
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) throw invalidInput(where, 'the data: URL does not hold valid base64');
  const mediaType = params[0] === '' ? undefined : params[0]!;
  if (mediaType !== undefined && !MEDIA_TYPE.test(mediaType)) throw invalidInput(where, "the data: URL's media type is not a media type");
  return { kind: 'inline', base64, ...(mediaType === undefined ? {} : { mediaType }) };
}

// The signatures of the image formats providers take; anything else is `image/*`.
const SIGNATURES: readonly (readonly [string, string])[] = [
  ['iVBORw0KGgo', 'image/png'],
  ['/9j/', 'image/jpeg'],
  ['R0lGOD', 'image/gif'],
  ['UklGR', 'image/webp'],
];

function sniffImage(base64: string): string {
  for (const [prefix, media] of SIGNATURES) if (base64.startsWith(prefix)) return media;
  return 'image/*';
}
