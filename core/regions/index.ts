// Region policies: the contract the operator writes (RegionPolicy resources) and the gateway
// routes by. See docs/crds.md (RegionPolicy) and docs/routing.md.
export * from './policy.js';
export * from './repository.js';
export * from './change-feed.js';
