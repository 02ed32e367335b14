// The one error class hierarchy of the service: every error a client can be answered with is a
// ServiceError carrying the API's error object {code, message, details?} and its HTTP status.
// Domains subclass it (ApiError in api/, UploadError in uploads/); nothing here depends on Koa, so
// any layer may throw one and the API renders it as is.
export interface ErrorDetail {
  code: string
  message: string
}
export interface ErrorBody {
  code: string
  message: string
  details?: ErrorDetail[]
  inner_error?: ErrorDetail
}

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers (e.g. X-Should-Retry: false on a final 409). */
    readonly headers?: Record<string, string>,
  ) {
    super(message)
    this.name = 'ServiceError'
  }

  body(): ErrorBody {
    return this.details && this.details.length > 0
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message }
  }
}
