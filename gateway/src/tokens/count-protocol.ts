import type { Countable } from './tokenizer.js';

/** A count the serving thread asks of the token counter thread. */
export interface CountCall {
  id: number;
  items: Countable[];
  /** Counting stops once the total is above this (the result is then some number above it). */
  stopAbove: number;
}

/** The counter thread's answer to one call: its total, or why it could not count. */
export type CountAnswer = { id: number; tokens: number } | { id: number; error: string };
