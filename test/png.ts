// Test images with real headers: the guard prices images by the dimensions it reads from them.
// Shared by the simulation harness and the soak (bench/soak.ts); no test runner imported.
import { Buffer } from 'node:buffer';
import { crc32 } from 'node:zlib';

/** A PNG whose header gives `width` × `height`, padded with `paddingBytes` of pseudo-random IDAT data. */
export function png(width: number, height: number, paddingBytes = 0): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.writeUInt8(8, 8); // bit depth
  ihdr.writeUInt8(2, 9); // truecolor
  // Pseudo-random padding: the base64 must look like real image data, not a run of 'A's.
  const idat = Buffer.alloc(paddingBytes);
  for (let i = 0, x = width * 31 + height; i < paddingBytes; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    idat[i] = x >>> 24;
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The same PNG as base64. */
export const pngBase64 = (width: number, height: number, paddingBytes = 0): string =>
  png(width, height, paddingBytes).toString('base64');
