// The portal's account activity log (docs/portal.md "Dashboard: activity").
export * from './activity-log.js';
