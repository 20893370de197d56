import { test } from 'vitest';
import assert from 'node:assert/strict';
import { sniffAudioFormat, wavSeconds } from './formats.js';

const bytes = (...values: (number | string)[]) =>
  Buffer.concat(values.map((v) => (typeof v === 'string' ? Buffer.from(v, 'latin1') : Buffer.from([v]))));

test('formats are recognised by their signature, not their name', () => {
  assert.equal(sniffAudioFormat(bytes('RIFF', 0, 0, 0, 0, 'WAVE')), 'wav', 'RIFF/WAVE');
  assert.equal(sniffAudioFormat(bytes('RIFF', 0, 0, 0, 0, 'AVI ')), undefined, 'RIFF that is not WAVE');
  assert.equal(sniffAudioFormat(bytes('ID3', 4, 0, 0, 0, 0, 0, 0, 0, 0)), 'mp3', 'ID3-tagged MP3');
  assert.equal(sniffAudioFormat(bytes(0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0, 0, 0, 0, 0)), 'mp3', 'MPEG-1 Layer III frame');
  assert.equal(sniffAudioFormat(bytes(0xff, 0xe9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), undefined, 'reserved MPEG version');
  assert.equal(sniffAudioFormat(bytes(0, 0, 0, 0x20, 'ftypM4A ')), 'm4a', 'ISO-BMFF ftyp');
  assert.equal(sniffAudioFormat(bytes('fLaC', 0, 0, 0, 0x22, 0, 0, 0, 0)), 'flac', 'FLAC');
  assert.equal(sniffAudioFormat(bytes('OggS', 0, 2, 0, 0, 0, 0, 0, 0)), 'ogg', 'Ogg');
  assert.equal(sniffAudioFormat(bytes(0x1a, 0x45, 0xdf, 0xa3, 0, 0, 0, 0, 0, 0, 0, 0)), 'webm', 'EBML');
  assert.equal(sniffAudioFormat(Buffer.from('{"not":"audio"}')), undefined, 'JSON');
  assert.equal(sniffAudioFormat(Buffer.alloc(0)), undefined, 'empty');
});

test('WAV duration comes from the fmt byte rate and the data size, past extra chunks', () => {
  const header = (byteRate: number, dataBytes: number, extra?: Buffer) => {
    const fmt = Buffer.alloc(24);
    fmt.write('fmt ', 0, 'latin1');
    fmt.writeUInt32LE(16, 4);
    fmt.writeUInt32LE(byteRate, 16);
    const data = Buffer.alloc(8);
    data.write('data', 0, 'latin1');
    data.writeUInt32LE(dataBytes, 4);
    return Buffer.concat([bytes('RIFF', 0, 0, 0, 0, 'WAVE'), fmt, extra ?? Buffer.alloc(0), data]);
  };
  assert.equal(wavSeconds(header(32_000, 64_000), 44 + 64_000), 2, 'two seconds at 32 kB/s');
  const list = Buffer.concat([Buffer.from('LIST', 'latin1'), Buffer.from([3, 0, 0, 0]), Buffer.from('abc\0', 'latin1')]);
  assert.equal(wavSeconds(header(32_000, 32_000, list), 56 + 32_000), 1, 'a LIST chunk (odd size, padded) is skipped');
  assert.equal(wavSeconds(header(32_000, 0xffffffff), 44 + 16_000), 0.5, 'streaming placeholder size: the uploaded bytes count');
  assert.equal(wavSeconds(header(32_000, 320_000), 44 + 16_000), 0.5, 'a data size larger than the upload is bounded by it');
  assert.equal(wavSeconds(bytes('RIFF', 0, 0, 0, 0, 'WAVE'), 12), undefined, 'no chunks');
  assert.equal(wavSeconds(header(1, 16_000), 44 + 16_000), 2, 'an implausibly low byte rate counts as 8 kB/s, not 16,000 s');
  assert.equal(wavSeconds(header(0xffffffff, 1_536_000), 44 + 1_536_000), 1, 'an implausibly high byte rate counts as the PCM maximum');
});
