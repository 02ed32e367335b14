// Errors of the upload domain: ServiceErrors (src/errors.ts) carrying the HTTP status and error code
// the API answers with; nothing here depends on Koa.
import { ServiceError, type ErrorDetail } from '../errors.js'

export type UploadErrorDetail = ErrorDetail

export type UploadErrorCode =
  | 'invalid_zip'
  | 'unsafe_entry'
  | 'payload_too_large'
  | 'bad_request'
  | 'forbidden'
  | 'conflict'
  | 'not_found'
  | 'too_many_requests'
  | 'insufficient_storage'

const STATUS: Record<UploadErrorCode, number> = {
  invalid_zip: 400,
  unsafe_entry: 400,
  bad_request: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  too_many_requests: 429,
  insufficient_storage: 507,
}

export class UploadError extends ServiceError {
  declare readonly code: UploadErrorCode
  declare readonly details: UploadErrorDetail[]
  constructor(
    code: UploadErrorCode,
    message: string,
    details: UploadErrorDetail[] = [],
    headers?: Record<string, string>,
  ) {
    super(STATUS[code], code, message, details, headers)
    this.name = 'UploadError'
  }
}

/**
 * Entry names are shown JSON-quoted so control characters and odd bytes stay visible and harmless,
 * and cut to 256 characters so refusing a huge name does not answer with a huge error.
 */
export const quoteEntry = (name: string) => JSON.stringify(name.length > 256 ? `${name.slice(0, 256)}...` : name)

export const invalidZip = (message: string, entry?: string) =>
  new UploadError('invalid_zip', message, [
    { code: 'invalid_zip', message: entry === undefined ? message : `entry ${quoteEntry(entry)}: ${message}` },
  ])

export const unsafeEntry = (entry: string, message: string) =>
  new UploadError('unsafe_entry', `unsafe zip entry ${quoteEntry(entry)}: ${message}`, [
    { code: 'unsafe_entry', message: `entry ${quoteEntry(entry)}: ${message}` },
  ])

export const badRequest = (param: string, message: string) =>
  new UploadError('bad_request', `invalid ${param}: ${message}`, [
    { code: 'invalid_input', message: `${param}: ${message}` },
  ])

export const insufficientStorage = (message: string) =>
  new UploadError('insufficient_storage', message, [{ code: 'insufficient_storage', message }])

export const tooManyUploads = (max: number) =>
  new UploadError(
    'too_many_requests',
    `${max} uploads are already in progress; retry later`,
    [{ code: 'too_many_requests', message: `at most ${max} uploads run at once` }],
    { 'Retry-After': '1' },
  )
