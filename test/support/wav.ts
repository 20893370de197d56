import { wavHeader as simulatorWavHeader } from '../simulator/audio.js';

/** The 44-byte RIFF/WAVE header of mono 16-bit PCM at `rate` Hz (16 kHz by default), from the simulator's one builder. */
export function wavHeader(dataBytes: number, rate = 16_000): Buffer {
  return simulatorWavHeader(dataBytes, rate);
}

/** A silent WAV file: the header and `dataBytes` zero bytes of samples. */
export function silentWav(dataBytes: number, rate = 16_000): Buffer {
  return Buffer.concat([wavHeader(dataBytes, rate), Buffer.alloc(dataBytes)]);
}
