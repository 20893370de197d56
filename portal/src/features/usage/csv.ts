// CSV for exports (RFC 4180, formula-safe): one writer, core/reports/exports.ts, for every export.
export { csvLine } from '../../../../core/reports/index.js';
