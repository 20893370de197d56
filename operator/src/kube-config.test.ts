import { describe, expect, test } from 'vitest';
import { loadKubeConfig } from './kube-config.js';

describe('the operator finds its cluster', () => {
  test('with no KUBECONFIG, no service account and no ~/.kube/config it refuses to start, saying what to set', () => {
    expect(() => loadKubeConfig({ env: {}, exists: () => false, home: '/home/dev' })).toThrow(
      /no Kubernetes cluster to run against: set KUBECONFIG to a kubeconfig file, put one at \/home\/dev\/\.kube\/config/,
    );
  });

  test('a home kubeconfig is taken as kubectl takes it', () => {
    // loadFromDefault reads the process's own environment and home: this only shows the check lets it through.
    const seen: string[] = [];
    expect(() =>
      loadKubeConfig({
        env: {},
        exists: (path) => {
          seen.push(path);
          return true;
        },
        home: '/home/dev',
      }),
    ).not.toThrow(/no Kubernetes cluster/);
    expect(seen).toEqual(['/home/dev/.kube/config']);
  });
});
