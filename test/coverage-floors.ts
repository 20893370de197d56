// Coverage floors (percent) that CI enforces on `npm test`. They only go up: when a change raises
// coverage, raise the floor to just below the new figure in the same commit; never lower one to
// make a change pass. The figures a run measured are in README.md ("Testing").
export const coverageFloors = {
  'core/**/*.ts': { lines: 0, functions: 0, branches: 0, statements: 0 },
  'gateway/src/**/*.ts': { lines: 0, functions: 0, branches: 0, statements: 0 },
};
