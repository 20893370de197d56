// Identity shared by the portal (and the admin features built on it): users, organisations,
// invites, one-time tokens, sessions, roles and the one authorisation decision.
export * from './roles.js';
export * from './users.js';
export * from './tokens.js';
export * from './sessions.js';
export * from './organisations.js';
export * from './invites.js';
export * from './administration.js';
export * from './lifetimes.js';
export * from './password-rule.js';
export * from './passwords.js';
export * from './bootstrap.js';
export * from './email.js';
