export * from './database.js';
export * from './data-dir-lock.js';
export { auditWriterReplyBounds, defaultReplyBounds, type ReplyBounds } from './lost-replies.js';
