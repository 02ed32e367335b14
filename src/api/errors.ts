// The error object of the spec: {code, message, details?}. Routes throw ApiError; one middleware renders it.
export interface ErrorDetail { code: string; message: string }
export interface ErrorBody { code: string; message: string; details?: ErrorDetail[]; inner_error?: ErrorDetail }

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly details?: ErrorDetail[]
  /** Extra response headers (e.g. X-Should-Retry: false on a final 409). */
  readonly headers?: Record<string, string>
  constructor(status: number, code: string, message: string, details?: ErrorDetail[], headers?: Record<string, string>) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.details = details
    this.headers = headers
  }
  body(): ErrorBody {
    return this.details && this.details.length > 0
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message }
  }
}

/** 400 bad_request with one invalid_input detail naming the parameter. */
export function invalidInput(param: string, message: string): ApiError {
  return new ApiError(400, 'bad_request', `invalid ${param}: ${message}`, [{ code: 'invalid_input', message: `${param}: ${message}` }])
}
export const notFound = (message: string) => new ApiError(404, 'not_found', message)
export const forbidden = (message: string) => new ApiError(403, 'forbidden', message)
