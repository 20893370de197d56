// Public surface of the error catalogue; the group data files stay internal.
export {
  errorCatalogue,
  errorDefinition,
  errorTypeForStatus,
  isErrorCode,
  type ErrorCode,
  type ErrorDefinition,
  type ErrorGroup,
  type ErrorType,
} from './catalogue.js';
export {
  ApiError,
  errorResponseHeaders,
  renderErrorBody,
  splitFormattedMessage,
  toApiError,
  type ApiErrorOptions,
  type ErrorBody,
} from './api-error.js';
export { networkCodes } from './dependency-outage.js';
export { foreignCodes, type ForeignCode } from './foreign-codes.js';
