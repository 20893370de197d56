import { ApiException } from '@kubernetes/client-node';

/** True when `error` is the Kubernetes API's answer with this HTTP status (404 absent, 409 conflict, …). */
export const isStatus = (error: unknown, code: number): boolean => error instanceof ApiException && error.code === code;
