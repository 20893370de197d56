export * from './server.js';
export * from './kube-for-tests.js';
export * from './kube-status.js';
export * from './object-store.js';
export * from './resource-types.js';
