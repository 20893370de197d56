// Reading a gateway's /metrics the way Prometheus would, for tests that count what moved.

/** One sample of the text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (the subset prom-client writes). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unreadable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** A scrape: sums of samples by name and a label subset. */
export class Scrape {
  constructor(
    readonly samples: Sample[],
    readonly text: string,
  ) {}

  /** Sum of the samples named `name` whose labels include `labels` (0 when none match). */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.matching(name, labels).reduce((total, s) => total + s.value, 0);
  }

  /** The samples named `name` whose labels include `labels`. */
  matching(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }
}

/** GETs a /metrics URL and parses it. */
export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`scrape of ${url} answered ${response.status}: ${text}`);
  return new Scrape(parseExposition(text), text);
}
