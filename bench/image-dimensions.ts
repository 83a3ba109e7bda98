// The guard's image-header reading (src/tokens/media.ts readImageDimensions) against the `image-size`
// package, the decision recorded in docs/ARCHITECTURE.md (Libraries): which headers each reads, what
// each does with hostile bytes (fast-check: signatures then garbage, cut headers handed over as a view
// of a larger buffer, flipped bytes, huge declared sizes), and the time of one read.
//
//   npm install --no-save image-size && node bench/image-dimensions.ts [--seed 4242]
//
// image-size is not a dependency: without it the script says so and stops.
import fc from 'fast-check';
import { readImageDimensions } from '../src/tokens/media.ts';

type Read = (bytes: Uint8Array) => { width: number; height: number } | undefined;

const seedAt = process.argv.indexOf('--seed');
const seed = seedAt >= 0 ? Number(process.argv[seedAt + 1]) : 4242;

let imageSize: ((bytes: Uint8Array) => { width?: number; height?: number }) | undefined;
try {
  const name = 'image-size';
  ({ imageSize } = (await import(name)) as { imageSize: typeof imageSize });
} catch {
  console.log(
    'bench/image-dimensions: image-size is not installed (npm install --no-save image-size); nothing to compare.',
  );
  process.exit(0);
}

/** Reads on which image-size threw (caught here, as the guard would have to). */
let thrown = 0;
// The same protocol for image-size as the guard's: the first 4 KiB, then 64 KiB when that fails.
const theirs: Read = (b) => {
  for (const bytes of [b.subarray(0, 4096), b.subarray(0, 65536)]) {
    try {
      const { width, height } = imageSize!(bytes);
      return { width: width ?? Number.NaN, height: height ?? Number.NaN };
    } catch {
      // unreadable at this length: try more, or give up
    }
  }
  thrown++;
  return undefined;
};
const ours: Read = (b) => readImageDimensions(b);

// ---- headers built by hand ----------------------------------------------------------------------
const be16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const le16 = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const be32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const le24 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];
const le32 = (n: number) => [...le24(n), (n >>> 24) & 0xff];
const str = (s: string) => [...s].map((c) => c.charCodeAt(0));
const bytes = (...parts: number[][]) => Uint8Array.from(parts.flat());
const segment = (marker: number, payload: number[]) => [0xff, marker, ...be16(payload.length + 2), ...payload];
const jpeg = (w: number, h: number, sof: number, exif: number) =>
  bytes(
    [0xff, 0xd8],
    segment(0xe1, [...str('Exif'), 0, 0, ...new Array<number>(exif).fill(0x41)]),
    segment(0xdb, new Array<number>(65).fill(1)),
    segment(sof, [8, ...be16(h), ...be16(w), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]),
    segment(0xda, [3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0]),
    [0x12, 0x34, 0xff, 0xd9],
  );
const headers: Array<[string, Uint8Array, number, number]> = [
  [
    'PNG',
    bytes(
      [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      be32(13),
      str('IHDR'),
      be32(1024),
      be32(768),
      [8, 6, 0, 0, 0],
      be32(0),
    ),
    1024,
    768,
  ],
  ['GIF', bytes(str('GIF89a'), le16(320), le16(200), [0xf7, 0, 0]), 320, 200],
  [
    'WebP lossy',
    bytes(
      str('RIFF'),
      le32(30),
      str('WEBP'),
      str('VP8 '),
      le32(18),
      [0, 0, 0, 0x9d, 0x01, 0x2a],
      le16(640),
      le16(480),
      [0, 0],
    ),
    640,
    480,
  ],
  [
    'WebP lossless',
    bytes(str('RIFF'), le32(30), str('WEBP'), str('VP8L'), le32(10), [0x2f], le32(299 | (8999 << 14)), [0, 0, 0, 0, 0]),
    300,
    9000,
  ],
  [
    'WebP extended',
    bytes(str('RIFF'), le32(30), str('WEBP'), str('VP8X'), le32(10), [0x10, 0, 0, 0], le24(4999), le24(1999)),
    5000,
    2000,
  ],
  ['JPEG baseline (SOF0)', jpeg(4032, 3024, 0xc0, 20), 4032, 3024],
  ['JPEG progressive (SOF2)', jpeg(800, 600, 0xc2, 20), 800, 600],
  ['JPEG lossless (SOF3)', jpeg(800, 600, 0xc3, 20), 800, 600],
  ['JPEG arithmetic (SOF9)', jpeg(800, 600, 0xc9, 20), 800, 600],
  ['JPEG with 20 KiB of EXIF', jpeg(1920, 1080, 0xc0, 20_000), 1920, 1080],
];

console.log(`image-dimensions: the guard's reader vs image-size; node ${process.version}, seed ${seed}\n`);
console.log('| header | guard | image-size |');
console.log('| --- | --- | --- |');
const shown = (d: ReturnType<Read>, w: number, h: number) =>
  d?.width === w && d.height === h ? 'read' : `not read (${d ? `${d.width}x${d.height}` : 'unknown'})`;
for (const [name, b, w, h] of headers) console.log(`| ${name} | ${shown(ours(b), w, h)} | ${shown(theirs(b), w, h)} |`);

// ---- hostile bytes ----------------------------------------------------------------------------
const valid = (d: ReturnType<Read>) =>
  d === undefined || (Number.isInteger(d.width) && Number.isInteger(d.height) && d.width > 0 && d.height > 0);
const signatures = [
  ...headers.map(([, b]) => [...b.subarray(0, 16)]),
  [0x42, 0x4d],
  [0x49, 0x49, 0x2a, 0],
  str('<svg '),
];
const cases: Array<[string, fc.Arbitrary<{ input: Uint8Array; copy?: Uint8Array }>]> = [
  [
    'a signature, then garbage',
    fc
      .tuple(fc.constantFrom(...signatures), fc.uint8Array({ maxLength: 300 }))
      .map(([s, t]) => ({ input: bytes(s, [...t]) })),
  ],
  [
    'a header cut short, as a view of a larger buffer',
    fc
      .tuple(fc.constantFrom(...headers), fc.nat(), fc.uint8Array({ minLength: 64, maxLength: 64 }))
      .map(([[, b], n, after]) => {
        const whole = bytes([...b], [...after]);
        const view = whole.subarray(0, n % (b.length + 1));
        return { input: view, copy: view.slice() };
      }),
  ],
  [
    'flipped bytes in a header',
    fc
      .tuple(fc.constantFrom(...headers), fc.array(fc.tuple(fc.nat(200), fc.nat(255)), { minLength: 1, maxLength: 6 }))
      .map(([[, b], flips]) => {
        const input = b.slice();
        for (const [i, v] of flips) if (i < input.length) input[i] = v;
        return { input };
      }),
  ],
  [
    'huge declared sizes and segment lengths',
    fc.tuple(fc.nat(0xffffffff), fc.nat(0xffffffff), fc.nat(0xffff), fc.boolean()).map(([w, h, len, png]) => ({
      input: png
        ? bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], be32(13), str('IHDR'), be32(w), be32(h), [8, 6, 0, 0])
        : bytes([
            0xff,
            0xd8,
            0xff,
            0xe0,
            ...be16(len),
            0,
            0,
            0xff,
            0xc0,
            0,
            17,
            8,
            ...be16(h & 0xffff),
            ...be16(w & 0xffff),
          ]),
    })),
  ],
];
console.log(
  '\n| hostile input (2,000 each) | guard: throws / invalid size / read past the view | image-size: throws (caught) / invalid size / read past the view |',
);
console.log('| --- | --- | --- |');
for (const [name, arbitrary] of cases) {
  const count = { ours: [0, 0, 0], theirs: [0, 0, 0] };
  fc.assert(
    fc.property(arbitrary, ({ input, copy }) => {
      for (const [who, read] of [
        ['ours', ours],
        ['theirs', theirs],
      ] as const) {
        let d: ReturnType<Read>;
        const before = thrown;
        try {
          d = read(input);
        } catch {
          count[who][0]! += 1;
          continue;
        }
        count[who][0]! += thrown - before;
        if (!valid(d)) count[who][1]! += 1;
        const fromCopy = copy ? read(copy) : d;
        if (copy && (d?.width !== fromCopy?.width || d?.height !== fromCopy?.height)) count[who][2]! += 1;
      }
    }),
    { seed, numRuns: 2000 },
  );
  console.log(`| ${name} | ${count.ours.join(' / ')} | ${count.theirs.join(' / ')} |`);
}

// ---- time of one read -------------------------------------------------------------------------
function nsPerRead(read: Read): number {
  const runs: number[] = [];
  for (let r = 0; r < 7; r++) {
    const start = performance.now();
    for (let i = 0; i < 20_000; i++) for (const [, b] of headers) read(b);
    runs.push(((performance.now() - start) * 1e6) / (20_000 * headers.length));
  }
  return runs.sort((a, b) => a - b)[3]!;
}
console.log('\n| reader | ns per read (median of 7 runs over the headers above) |');
console.log('| --- | ---: |');
console.log(`| guard | ${nsPerRead(ours).toFixed(0)} |`);
console.log(`| image-size | ${nsPerRead(theirs).toFixed(0)} |`);
