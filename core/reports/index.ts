export * from './definition.js';
export * from './reports.js';
export * from './rows.js';
export * from './exports.js';
export * from './schedules.js';
export * from './schedule-runs.js';
