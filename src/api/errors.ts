// The API's error object {code, message, details?}. Routes throw ApiError (a ServiceError,
// src/errors.ts, like the upload domain's UploadError); one middleware renders any ServiceError.
import { ServiceError, type ErrorBody, type ErrorDetail } from '../errors.js'

export type { ErrorBody, ErrorDetail }

export class ApiError extends ServiceError {
  constructor(
    status: number,
    code: string,
    message: string,
    details?: ErrorDetail[],
    headers?: Record<string, string>,
  ) {
    super(status, code, message, details, headers)
    this.name = 'ApiError'
  }
}

/** 400 bad_request with one invalid_input detail naming the parameter. */
export function invalidInput(param: string, message: string): ApiError {
  return new ApiError(400, 'bad_request', `invalid ${param}: ${message}`, [
    { code: 'invalid_input', message: `${param}: ${message}` },
  ])
}
export const notFound = (message: string) => new ApiError(404, 'not_found', message)
export const forbidden = (message: string) => new ApiError(403, 'forbidden', message)
