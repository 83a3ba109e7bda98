import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import type { FilePart, ImagePart } from '../../src/messages.ts';
import {
  DEFAULT_FILE_TOKENS,
  DEFAULT_IMAGE_TOKENS,
  MAX_HEADER_BYTES,
  PDF_BYTES_PER_PAGE,
  PDF_PAGE_TOKENS,
  UNKNOWN_IMAGE_TOKENS,
  estimatePdfPages,
  fileTokens,
  imagePartTokens,
  imageTokens,
  mediaProviderForModel,
  readImageDimensions,
} from '../../src/tokens/media.ts';

// ---- hand-built headers -----------------------------------------------------------------------

const be16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const le16 = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const be32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const le24 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];
const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
const str = (s: string) => [...s].map((c) => c.charCodeAt(0));
const bytes = (...parts: number[][]) => Uint8Array.from(parts.flat());
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
const dataUrl = (b: Uint8Array, type: string) => `data:${type};base64,${b64(b)}`;

function png(width: number, height: number): Uint8Array {
  return bytes(
    [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
    be32(13),
    str('IHDR'),
    be32(width),
    be32(height),
    [8, 6, 0, 0, 0],
    be32(0), // CRC (not checked)
  );
}

function gif(width: number, height: number): Uint8Array {
  return bytes(str('GIF89a'), le16(width), le16(height), [0xf7, 0, 0]);
}

function webpLossy(width: number, height: number): Uint8Array {
  return bytes(
    str('RIFF'),
    le32(30),
    str('WEBP'),
    str('VP8 '),
    le32(18),
    [0, 0, 0],
    [0x9d, 0x01, 0x2a],
    le16(width),
    le16(height),
    [0, 0],
  );
}

function webpLossless(width: number, height: number): Uint8Array {
  const bits = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14);
  return bytes(str('RIFF'), le32(30), str('WEBP'), str('VP8L'), le32(10), [0x2f], le32(bits), [0, 0, 0, 0, 0]);
}

function webpExtended(width: number, height: number): Uint8Array {
  return bytes(
    str('RIFF'),
    le32(30),
    str('WEBP'),
    str('VP8X'),
    le32(10),
    [0x10, 0, 0, 0],
    le24(width - 1),
    le24(height - 1),
  );
}

/** A marker segment: FF, marker, big-endian length (including itself), payload. */
function segment(marker: number, payload: number[]): number[] {
  return [0xff, marker, ...be16(payload.length + 2), ...payload];
}

function jpeg(
  width: number,
  height: number,
  opts: { sof?: number; exifBytes?: number; extra?: number[][] } = {},
): Uint8Array {
  const sof = opts.sof ?? 0xc0;
  const exif = [...str('Exif'), 0, 0, ...new Array<number>(opts.exifBytes ?? 20).fill(0x41)];
  return bytes(
    [0xff, 0xd8],
    segment(0xe1, exif), // APP1 (EXIF) before SOF
    segment(0xdb, new Array<number>(65).fill(1)), // DQT
    ...(opts.extra ?? []),
    segment(sof, [8, ...be16(height), ...be16(width), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]),
    segment(0xc4, [0, ...new Array<number>(16).fill(0)]), // DHT
    segment(0xda, [3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0]), // SOS
    [0x12, 0x34, 0xff, 0xd9],
  );
}

/** Pads `b` to a multiple of 3 bytes so its base64 has no '=' and can be concatenated. */
function pad3(b: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(b.length / 3) * 3);
  out.set(b);
  return out;
}

// ---- readImageDimensions ----------------------------------------------------------------------

describe('readImageDimensions', () => {
  const cases: Array<[string, Uint8Array, number, number]> = [
    ['png', png(1024, 768), 1024, 768],
    ['gif', gif(320, 200), 320, 200],
    ['webp VP8', webpLossy(640, 480), 640, 480],
    ['webp VP8L', webpLossless(300, 9000), 300, 9000],
    ['webp VP8X', webpExtended(5000, 20000), 5000, 20000],
    ['jpeg baseline with APP1', jpeg(4032, 3024), 4032, 3024],
    ['jpeg progressive (SOF2)', jpeg(800, 600, { sof: 0xc2 }), 800, 600],
  ];

  for (const [name, data, width, height] of cases) {
    it(`reads ${name} from bytes, ArrayBuffer, base64 and a data: URL`, () => {
      const expected = { width, height };
      expect(readImageDimensions(data)).toEqual(expected);
      expect(readImageDimensions(data.slice().buffer)).toEqual(expected);
      expect(readImageDimensions(b64(data))).toEqual(expected);
      expect(readImageDimensions(dataUrl(data, 'image/whatever'))).toEqual(expected);
      expect(readImageDimensions(new URL(dataUrl(data, 'image/whatever')))).toEqual(expected);
    });
  }

  it('reads a JPEG whose SOF lies beyond the first sniff (large EXIF), and URL-safe / wrapped base64', () => {
    const big = jpeg(1920, 1080, { exifBytes: 30_000 });
    expect(readImageDimensions(big)).toEqual({ width: 1920, height: 1080 });
    const wrapped = b64(big).replace(/.{76}/g, '$&\r\n');
    expect(readImageDimensions(wrapped)).toEqual({ width: 1920, height: 1080 });
    const urlSafe = b64(png(7, 9)).replace(/\+/g, '-').replace(/\//g, '_');
    expect(readImageDimensions(urlSafe)).toEqual({ width: 7, height: 9 });
  });

  it('skips several APP segments, fill bytes and standalone markers before SOF', () => {
    const extra = [
      segment(0xe0, str('JFIF\0\x01\x02')),
      segment(0xe2, new Array<number>(5000).fill(7)),
      [0xff, 0xff, 0xff],
    ];
    // The fill bytes above end with FF, so the next segment's FF starts a marker after fill.
    expect(readImageDimensions(jpeg(10, 20, { extra }))).toEqual({ width: 10, height: 20 });
  });

  it('gives up (undefined) when the JPEG SOF lies beyond MAX_HEADER_BYTES', () => {
    const app = segment(0xe2, new Array<number>(60_000).fill(0));
    const data = jpeg(100, 100, { extra: [app, app] });
    expect(data.length).toBeGreaterThan(MAX_HEADER_BYTES);
    expect(readImageDimensions(data)).toBeUndefined();
  });

  it('returns undefined for references, other formats, garbage and truncated headers', () => {
    expect(readImageDimensions('https://example.com/cat.png')).toBeUndefined();
    expect(readImageDimensions('http://example.com/cat.png')).toBeUndefined();
    expect(readImageDimensions(new URL('https://example.com/cat.png'))).toBeUndefined();
    expect(readImageDimensions('')).toBeUndefined();
    expect(readImageDimensions('not base64 at all!')).toBeUndefined();
    expect(readImageDimensions('data:image/png;base64')).toBeUndefined(); // no comma
    expect(readImageDimensions(new Uint8Array(0))).toBeUndefined();
    expect(readImageDimensions(bytes(str('BM'), new Array<number>(60).fill(1)))).toBeUndefined(); // BMP: not read
    for (const full of [png(5, 5), gif(5, 5), webpLossy(5, 5), webpLossless(5, 5), webpExtended(5, 5), jpeg(5, 5)]) {
      for (let cut = 0; cut < full.length - 8; cut++) {
        const partial = full.subarray(0, cut);
        expect(() => readImageDimensions(partial)).not.toThrow();
        if (cut < 16) expect(readImageDimensions(partial)).toBeUndefined();
      }
    }
    expect(readImageDimensions(jpeg(5, 5).subarray(0, 30))).toBeUndefined();
    expect(readImageDimensions(png(0, 10))).toBeUndefined();
    expect(readImageDimensions(jpeg(10, 0))).toBeUndefined(); // height set later by DNL: unknown
  });

  it('handles a 10 MB base64 string without decoding all of it', () => {
    const header = b64(pad3(png(1500, 900)));
    const jpegHeader = b64(pad3(jpeg(333, 444)));
    const filler = 'A'.repeat(10 * 1024 * 1024);
    const huge = header + filler;
    const hugeJpeg = jpegHeader + filler;
    const hugeUrl = `data:image/png;base64,${huge}`;
    const start = performance.now();
    for (let i = 0; i < 20; i++) {
      expect(readImageDimensions(huge)).toEqual({ width: 1500, height: 900 });
      expect(readImageDimensions(hugeUrl)).toEqual({ width: 1500, height: 900 });
      expect(readImageDimensions(hugeJpeg)).toEqual({ width: 333, height: 444 });
    }
    // 60 full decodes of 10 MB would take seconds; bounded prefixes take well under a millisecond each.
    expect(performance.now() - start).toBeLessThan(1000);
    // A JPEG whose SOF never comes: the walk stops within the bounded prefix.
    const noSof = b64(pad3(bytes([0xff, 0xd8], segment(0xe1, [1, 2, 3])))) + filler;
    expect(readImageDimensions(noSof)).toBeUndefined();
  });

  it('never throws on random bytes or strings (property)', () => {
    const signatures = [
      [],
      [0xff, 0xd8, 0xff],
      [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      str('GIF89a'),
      [...str('RIFF'), 0, 0, 0, 0, ...str('WEBP')],
    ];
    fc.assert(
      fc.property(fc.constantFrom(...signatures), fc.uint8Array({ maxLength: 600 }), (sig, rest) => {
        const data = bytes(sig, [...rest]);
        for (const input of [data, b64(data), dataUrl(data, 'image/png')]) {
          const result = readImageDimensions(input);
          if (result !== undefined) {
            expect(Number.isInteger(result.width) && result.width > 0).toBe(true);
            expect(Number.isInteger(result.height) && result.height > 0).toBe(true);
          }
        }
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        readImageDimensions(s);
        readImageDimensions(`data:${s}`);
      }),
    );
  });
});

describe('readImageDimensions on a view of a larger buffer', () => {
  // A caller's subarray, or a Buffer from Node's shared pool, sits in a larger ArrayBuffer: the sizes
  // must come from the bytes of the view only (a parser reading through `view.buffer` would take
  // them from whatever follows: the rest of a file, or another buffer of the pool).
  it('reads nothing past the end of the view: a header cut short is unknown, never read from what follows (property)', () => {
    const images = [png(1024, 768), gif(320, 200), webpLossy(640, 480), webpExtended(5000, 2000), jpeg(4032, 3024)];
    fc.assert(
      fc.property(
        fc.constantFrom(...images),
        fc.nat(),
        fc.uint8Array({ minLength: 64, maxLength: 64 }),
        (image, n, after) => {
          const whole = bytes([...image], [...after]);
          const cut = n % (image.length + 1);
          const view = whole.subarray(0, cut);
          expect(readImageDimensions(view)).toEqual(readImageDimensions(view.slice()));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

// ---- providers and formulas -------------------------------------------------------------------

describe('mediaProviderForModel', () => {
  it.each([
    ['gpt-4o', 'openai'],
    ['gpt-4.1-mini', 'openai'],
    ['o1', 'openai'],
    ['o3-mini', 'openai'],
    ['o4-mini-2025-04-16', 'openai'],
    ['chatgpt-4o-latest', 'openai'],
    ['openai/gpt-4o', 'openai'],
    ['ft:gpt-4o-mini:acme::abc', 'openai'],
    ['claude-3-5-sonnet-20241022', 'anthropic'],
    ['anthropic/claude-sonnet-4', 'anthropic'],
    ['anthropic.claude-3-haiku-20240307-v1:0', 'anthropic'],
    ['us.anthropic.claude-sonnet-4-20250514-v1:0', 'anthropic'],
    ['gemini-2.0-flash', 'google'],
    ['models/gemini-1.5-pro', 'google'],
    ['google/gemini-2.5-pro', 'google'],
    ['llama-3.2-90b-vision', 'generic'],
    ['mistral-large', 'generic'],
    ['', 'generic'],
    [undefined, 'generic'],
  ] as const)('%s -> %s', (model, provider) => {
    expect(mediaProviderForModel(model)).toBe(provider);
  });
});

describe('imageTokens', () => {
  it("follows OpenAI's tile formula", () => {
    expect(imageTokens({ width: 1024, height: 1024 }, 'openai', 'high')).toBe(765);
    expect(imageTokens({ width: 2048, height: 4096 }, 'openai', 'high')).toBe(1105);
    expect(imageTokens({ width: 2048, height: 4096 }, 'openai', 'low')).toBe(85);
    expect(imageTokens({ width: 2048, height: 4096 }, 'openai')).toBe(1105); // auto counts as high
    expect(imageTokens({ width: 512, height: 512 }, 'openai', 'high')).toBe(255); // never scaled up
    expect(imageTokens(undefined, 'openai', 'low')).toBe(85);
  });

  it("follows Anthropic's pixels / 750 with the resize cap", () => {
    expect(imageTokens({ width: 1000, height: 1000 }, 'anthropic')).toBe(1334);
    expect(imageTokens({ width: 200, height: 200 }, 'anthropic')).toBe(54);
    expect(imageTokens({ width: 1092, height: 1092 }, 'anthropic')).toBe(1590);
    const huge = imageTokens({ width: 8000, height: 6000 }, 'anthropic');
    expect(huge).toBeGreaterThan(1500);
    expect(huge).toBeLessThanOrEqual(1600);
    expect(imageTokens({ width: 4000, height: 200 }, 'anthropic')).toBe(Math.ceil((1568 * 78) / 750)); // long edge cap
  });

  it("follows Gemini's 258-token tiles", () => {
    expect(imageTokens({ width: 300, height: 300 }, 'google')).toBe(258);
    expect(imageTokens({ width: 384, height: 100 }, 'google')).toBe(258);
    expect(imageTokens({ width: 1000, height: 700 }, 'google')).toBe(258 * 2);
    expect(imageTokens({ width: 1536, height: 1536 }, 'google')).toBe(258 * 4);
    expect(imageTokens({ width: 12_000, height: 12_000 }, 'google')).toBe(258 * 16); // fits 3072x3072 first
  });

  it('generic takes the larger of OpenAI and Anthropic', () => {
    expect(imageTokens({ width: 1000, height: 1000 }, 'generic')).toBe(1334);
    expect(imageTokens({ width: 100, height: 2000 }, 'generic')).toBe(
      imageTokens({ width: 100, height: 2000 }, 'openai'),
    );
  });

  it('uses the documented constants when dimensions are unknown or unusable', () => {
    for (const p of ['openai', 'anthropic', 'google', 'generic'] as const) {
      expect(imageTokens(undefined, p)).toBe(UNKNOWN_IMAGE_TOKENS[p]);
      expect(imageTokens({ width: 0, height: 5 }, p)).toBe(UNKNOWN_IMAGE_TOKENS[p]);
      expect(imageTokens({ width: Number.NaN, height: 5 }, p)).toBe(UNKNOWN_IMAGE_TOKENS[p]);
    }
    expect(DEFAULT_IMAGE_TOKENS).toBe(Math.max(...Object.values(UNKNOWN_IMAGE_TOKENS)));
    expect(UNKNOWN_IMAGE_TOKENS.generic).toBe(DEFAULT_IMAGE_TOKENS);
  });

  it('never exceeds the unknown-size cost for OpenAI and Anthropic (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 100_000 }), (width, height) => {
        const d = { width, height };
        expect(imageTokens(d, 'openai')).toBeLessThanOrEqual(UNKNOWN_IMAGE_TOKENS.openai);
        expect(imageTokens(d, 'anthropic')).toBeLessThanOrEqual(UNKNOWN_IMAGE_TOKENS.anthropic);
        expect(imageTokens(d, 'generic')).toBeLessThanOrEqual(DEFAULT_IMAGE_TOKENS);
        expect(imageTokens(d, 'google')).toBeLessThanOrEqual(258 * 16);
      }),
    );
  });
});

describe('imagePartTokens', () => {
  it('reads the image and honours providerOptions.openai.imageDetail', () => {
    const part: ImagePart = { type: 'image', image: b64(png(1024, 1024)), mediaType: 'image/png' };
    expect(imagePartTokens(part, 'openai')).toBe(765);
    expect(imagePartTokens({ ...part, providerOptions: { openai: { imageDetail: 'low' } } }, 'openai')).toBe(85);
    expect(imagePartTokens({ ...part, providerOptions: { openai: { imageDetail: 'bogus' } } }, 'openai')).toBe(765);
    expect(imagePartTokens(part, 'anthropic')).toBe(Math.ceil((1024 * 1024) / 750));
    expect(imagePartTokens({ type: 'image', image: new URL('https://x.test/a.png') }, 'anthropic')).toBe(
      UNKNOWN_IMAGE_TOKENS.anthropic,
    );
  });
});

// ---- files ------------------------------------------------------------------------------------

function pdf(
  pageCount: number,
  opts: { linearized?: number; bodyBytes?: number; treeAtEnd?: boolean } = {},
): Uint8Array {
  const parts: string[] = ['%PDF-1.7\n%\xe2\xe3\xcf\xd3\n'];
  if (opts.linearized !== undefined)
    parts.push(
      `1 0 obj\n<< /Linearized 1 /L 1000 /H [ 600 150 ] /O 4 /E 900 /N ${opts.linearized} /T 800 >>\nendobj\n`,
    );
  const tree = `2 0 obj\n<< /Type /Pages /Kids [${Array.from({ length: pageCount }, (_, i) => `${10 + i} 0 R`).join(' ')}] /Count ${pageCount} >>\nendobj\n`;
  const outline = '3 0 obj\n<< /Type /Outlines /Count 999 >>\nendobj\n';
  if (!opts.treeAtEnd) parts.push(tree, outline);
  if (opts.bodyBytes)
    parts.push(`5 0 obj\n<< /Length ${opts.bodyBytes} >>\nstream\n${'x'.repeat(opts.bodyBytes)}\nendstream\nendobj\n`);
  if (opts.treeAtEnd) parts.push(outline, tree);
  parts.push('trailer\n<< /Root 1 0 R >>\n%%EOF\n');
  return Uint8Array.from([...parts.join('')].map((c) => c.charCodeAt(0) & 0xff));
}

function pdfWithoutTree(size: number, pageObjects = 0): Uint8Array {
  const pages = Array.from(
    { length: pageObjects },
    (_, i) => `${i + 4} 0 obj << /Type /Page /Parent 2 0 R >> endobj\n`,
  ).join('');
  const head = `%PDF-1.5\n${pages}`;
  const out = new Uint8Array(size).fill(0x20);
  out.set([...head].map((c) => c.charCodeAt(0)));
  return out;
}

describe('estimatePdfPages', () => {
  it('reads the page tree root, preferring the linearization count', () => {
    expect(estimatePdfPages(pdf(3))).toBe(3);
    expect(estimatePdfPages(b64(pdf(12)))).toBe(12);
    expect(estimatePdfPages(pdf(3, { linearized: 40 }))).toBe(40);
  });

  it('finds the page tree at the end of a large file, through base64', () => {
    const data = pdf(17, { bodyBytes: 400_000, treeAtEnd: true });
    expect(estimatePdfPages(data)).toBe(17);
    expect(estimatePdfPages(b64(data))).toBe(17);
    expect(estimatePdfPages(dataUrl(data, 'application/pdf'))).toBe(17);
  });

  it('counts page objects in a small file, else estimates from the size', () => {
    expect(estimatePdfPages(pdfWithoutTree(2000, 4))).toBe(4);
    expect(estimatePdfPages(pdfWithoutTree(2000))).toBe(1);
    expect(estimatePdfPages(b64(pdfWithoutTree(500_000)))).toBe(Math.ceil(500_000 / PDF_BYTES_PER_PAGE));
    expect(estimatePdfPages('https://x.test/a.pdf')).toBeUndefined();
  });
});

describe('fileTokens', () => {
  const file = (data: FilePart['data'], mediaType: string): FilePart => ({ type: 'file', data, mediaType });

  it('bills PDFs per page', () => {
    expect(fileTokens(file(b64(pdf(3)), 'application/pdf'), 'anthropic')).toBe(3 * PDF_PAGE_TOKENS.anthropic);
    expect(fileTokens(file(pdf(3), 'application/pdf'), 'google')).toBe(3 * PDF_PAGE_TOKENS.google);
    expect(fileTokens(file(pdf(3), 'application/pdf'), 'generic')).toBe(3 * PDF_PAGE_TOKENS.generic);
    expect(fileTokens(file('https://x.test/a.pdf', 'application/pdf'), 'openai')).toBe(DEFAULT_FILE_TOKENS);
  });

  it('bills text files by byte length / 4 without decoding', () => {
    const text = new TextEncoder().encode('x'.repeat(400));
    expect(fileTokens(file(b64(text), 'text/plain'), 'openai')).toBe(100);
    expect(fileTokens(file(b64(new Uint8Array(401)), 'text/csv'), 'openai')).toBe(101); // '=' padding excluded
    expect(fileTokens(file(text, 'application/json'), 'anthropic')).toBe(100);
    expect(fileTokens(file(dataUrl(text, 'text/markdown'), 'text/markdown; charset=utf-8'), 'google')).toBe(100);
    expect(fileTokens(file(b64(text), 'application/vnd.api+json'), 'generic')).toBe(100);
    expect(fileTokens(file('https://x.test/a.txt', 'text/plain'), 'generic')).toBe(DEFAULT_FILE_TOKENS);
  });

  it('bills image files as images and anything else as the default', () => {
    expect(fileTokens(file(png(1024, 1024), 'image/png'), 'openai')).toBe(765);
    expect(fileTokens(file(b64(gif(200, 200)), 'image/gif'), 'anthropic')).toBe(54);
    expect(fileTokens(file(b64(new Uint8Array(3000)), 'image/heic'), 'google')).toBe(UNKNOWN_IMAGE_TOKENS.google);
    expect(fileTokens(file(b64(new Uint8Array(3_000_000)), 'application/zip'), 'generic')).toBe(DEFAULT_FILE_TOKENS);
    expect(fileTokens(file(new Uint8Array(10), 'audio/mpeg'), 'openai')).toBe(DEFAULT_FILE_TOKENS);
  });
});
