/** The 44-byte RIFF/WAVE header of mono 16-bit PCM at `rate` Hz with `dataBytes` of samples (tests build uploads with it). */
export function wavHeader(dataBytes: number, rate = 16_000): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** A silent WAV file: the header and `dataBytes` zero bytes of samples. */
export function silentWav(dataBytes: number, rate = 16_000): Buffer {
  return Buffer.concat([wavHeader(dataBytes, rate), Buffer.alloc(dataBytes)]);
}
